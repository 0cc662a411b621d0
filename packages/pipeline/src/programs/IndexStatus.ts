/** What the stored index holds, and which of its files changed since it was built. */

import { compareCodePoints } from "@funcpipe/domain/Ranking"
import { keepAll } from "@funcpipe/domain/Rule"
import { Effect, Path, Stream } from "effect"
import { PackWriter } from "../index/BodyPack.ts"
import { prepareBatch, TermNumbering } from "../index/prepare/Prepare.ts"
import { hashDoc, planSync } from "../index/Sync.ts"
import { claimer } from "../read/Claim.ts"
import { DocumentSource } from "../read/DocumentSource.ts"
import { rootLabelsOf } from "../read/Folder.ts"
import { keepTest } from "../read/Keep.ts"
import { IndexStore } from "../store/IndexStore.ts"
import { knownFiles } from "./KnownFiles.ts"
import { requireManifest } from "./QueryIndex.ts"

/** One file whose documents differ from the index: new documents, changed ones, or ones that are gone. */
export interface FileChange {
  readonly source: string
  readonly added: number
  readonly updated: number
  readonly deleted: number
}

/**
 * The manifest, the indexed paths and the files that changed since the last index run, found by reading the paths
 * again and comparing content hashes (nothing is embedded or written), under the index's keep rule. A path that can
 * no longer be read counts as deleted, with the reason in `unreadable`.
 */
export const indexStatus = Effect.fn("indexStatus")(function* () {
  const store = yield* IndexStore
  const source = yield* DocumentSource
  const manifest = yield* requireManifest()
  // Damage anywhere in the index, not only in what status reads, is reported with the parts it is in.
  yield* store.check
  const path = yield* Path.Path
  // The stored rule's paths are absolute already.
  const keeps = keepTest(manifest.keep ?? keepAll, (file) => path.resolve(file))
  const roots = yield* store.roots
  // Each path's files are named as the index named them (see `rootLabelsOf`).
  const labels = manifest.rootLabels ?? rootLabelsOf(path, roots)
  // The documents' ids, hashes, sources and chunk counts as a run reads them (not every field decoded: a tenth of the
  // time on a folder of 38k small files), and the files' stamps, from one state of the index.
  const [storedDocs, stamps] = yield* store.transaction((w) => Effect.all([w.storedDocs, w.fileStamps]), {
    readOnly: true
  })
  const stored = [...storedDocs.values()]
  const storedIds = new Set<string>(stored.map((s) => s.docId))
  // Files whose stamp is as the last run recorded are not read: their stored documents stand for them.
  const files = knownFiles(stamps, stored)
  // Records are taken as an index run takes them: the first of each doc id, then the keep rule.
  const claim = claimer(keeps)
  const firsts: Array<{ readonly docId: string; readonly hash: string; readonly source: string }> = []
  const unreadable: Array<string> = []
  // Whether a new document chunks to anything, asked of the stage with memory kept for the whole run.
  const numbering = new TermNumbering()
  const packs = new PackWriter()
  for (const root of roots) {
    yield* source.read([root], labels, files.known).pipe(
      Stream.runForEach((record) =>
        Effect.sync(() => {
          const claimed = claim.take(record)
          if (claimed._tag === "Unread") {
            for (const entry of files.docsOf(claimed.file)) {
              if (claim.known(entry.docId, claimed.file) === undefined) firsts.push(entry)
            }
            return
          }
          if (claimed._tag !== "Kept") return
          const { doc, source } = claimed.sourced
          // A document that cleans and chunks to nothing is skipped by an index run, so it is not new either.
          if (
            !storedIds.has(doc.docId) &&
            prepareBatch([doc], { ...manifest, rawPacks: true }, numbering, packs).docs[0]!.starts.length === 0
          )
            return
          firsts.push({ docId: doc.docId, hash: hashDoc(doc), source })
        })
      ),
      Effect.catch((error) => Effect.sync(() => void unreadable.push(error.message)))
    )
  }
  const plan = planSync(stored, firsts)
  const changes = new Map<string, { added: number; updated: number; deleted: number }>()
  const bump = (file: string, kind: "added" | "updated" | "deleted") => {
    const entry = changes.get(file) ?? { added: 0, updated: 0, deleted: 0 }
    entry[kind]++
    changes.set(file, entry)
  }
  const sourceNow = new Map(firsts.map((d) => [d.docId, d.source] as const))
  const sourceThen = new Map<string, string>(stored.map((d) => [d.docId, d.source] as const))
  for (const id of plan.added) bump(sourceNow.get(id)!, "added")
  for (const id of plan.updated) bump(sourceNow.get(id)!, "updated")
  for (const id of plan.deleted) bump(sourceThen.get(id)!, "deleted")
  const changed: ReadonlyArray<FileChange> = [...changes.entries()]
    .map(([file, counts]) => ({ source: file, ...counts }))
    .sort((a, b) => compareCodePoints(a.source, b.source))
  return { location: store.location, manifest, roots, documents: stored.length, changed, unreadable } as const
})
