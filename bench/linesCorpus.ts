/**
 * `npm run bench:lines-corpus -- --pages DIR --docs N --out DIR`: a large corpus of real English for vector figures
 * at hundreds of MB: N documents of about 500 characters (one chunk each), each made of lines drawn at random (seeded)
 * from the Markdown files under DIR (the tldr pages' English folder, say), written as JSON Lines in 10 files.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { parseArgs } from "node:util"
import { prng } from "./Corpus.ts"

const { values: flags } = parseArgs({
  options: {
    pages: { type: "string" },
    docs: { type: "string", default: "300000" },
    out: { type: "string" },
    seed: { type: "string", default: "42" }
  }
})
if (flags.pages === undefined || flags.out === undefined) {
  console.error("give the folder to draw lines from (--pages) and the folder to write to (--out)")
  process.exit(2)
}

const lines: Array<string> = []
const walk = (dir: string): void => {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) walk(path)
    else if (path.endsWith(".md"))
      for (const line of readFileSync(path, "utf8").split("\n")) if (line.trim().length > 20) lines.push(line.trim())
  }
}
walk(flags.pages)
console.error(`${lines.length} lines`)
const random = prng(Number(flags.seed))
const docs = Number(flags.docs)
const FILES = 10
mkdirSync(flags.out, { recursive: true })
for (let f = 0; f < FILES; f++) {
  const out: Array<string> = []
  for (let i = f; i < docs; i += FILES) {
    let text = ""
    while (text.length < 420) text += `${lines[Math.floor(random() * lines.length)]} `
    out.push(JSON.stringify({ doc_id: `g${i}`, title: "", text: text.slice(0, 500) }))
  }
  writeFileSync(join(flags.out, `docs-${f}.jsonl`), `${out.join("\n")}\n`)
}
