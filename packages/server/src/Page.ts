/**
 * The search page served at `/`: one self-contained HTML document (no CDN, no build step, works offline) that calls
 * the JSON API from the browser.
 */

/** The page. It asks for the token only when the server answers 401, and keeps it for the browser tab's session. */
export const searchPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>FuncPipe search</title>
<link rel="icon" href="data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 16 16'%3E%3Crect width='16' height='16' rx='3' fill='%232563eb'/%3E%3Cpath d='M4 4h8M4 8h6M4 12h4' stroke='white' stroke-width='2'/%3E%3C/svg%3E">
<style>
  :root { color-scheme: light dark; --muted: #6b7280; --line: #d1d5db; --mark: #fde68a; --accent: #2563eb; }
  * { box-sizing: border-box; }
  body { font: 15px/1.5 system-ui, sans-serif; margin: 0 auto; max-width: 60rem; padding: 1.5rem; }
  h1 { font-size: 1.4rem; margin: 0 0 .25rem; }
  #status { color: var(--muted); font-size: .9rem; margin-bottom: 1rem; }
  form { display: flex; flex-wrap: wrap; gap: .5rem; align-items: end; margin-bottom: 1rem; }
  label { display: flex; flex-direction: column; font-size: .8rem; color: var(--muted); }
  input, select, button { font: inherit; padding: .4rem .6rem; border: 1px solid var(--line); border-radius: .4rem; }
  #q { width: 100%; }
  #q-label { flex: 1 1 20rem; }
  #topk { width: 5rem; }
  button { background: var(--accent); color: white; border-color: var(--accent); cursor: pointer; }
  #token-row { display: none; gap: .5rem; margin-bottom: 1rem; }
  #token-row.shown { display: flex; }
  #message { margin: .5rem 0; }
  #message.error { color: #b91c1c; }
  ol { list-style: none; padding: 0; margin: 0; }
  li.result { border-top: 1px solid var(--line); padding: .75rem 0; }
  .meta { display: flex; gap: 1rem; flex-wrap: wrap; font-size: .85rem; color: var(--muted); }
  .rank { font-weight: 600; color: inherit; }
  .doc { font-family: ui-monospace, monospace; }
  .title { font-weight: 600; color: inherit; }
  .more { border: none; background: none; color: var(--accent); padding: 0; font-size: .85rem; cursor: pointer; }
  .more-list { list-style: none; margin: .25rem 0 0 1rem; padding: 0 0 0 .75rem; border-left: 2px solid var(--line); }
  .more-list li { padding: .35rem 0; }
  #group-label { flex-direction: row; align-items: center; gap: .35rem; font-size: .9rem; }
  .text { margin: .35rem 0; white-space: pre-wrap; overflow-wrap: anywhere; }
  .section { margin-top: .25rem; font-size: .85rem; color: var(--muted); }
  mark { background: var(--mark); color: black; padding: 0 .1em; border-radius: .15em; }
  details summary { cursor: pointer; color: var(--accent); font-size: .85rem; }
  table.explain { border-collapse: collapse; font-size: .85rem; margin: .35rem 0; }
  table.explain th, table.explain td { border: 1px solid var(--line); padding: .2rem .5rem; text-align: right; }
  table.explain th:first-child, table.explain td:first-child { text-align: left; }
  #ask[hidden], #answer[hidden] { display: none; }
  #answer { border: 1px solid var(--line); border-radius: .5rem; padding: .75rem 1rem; margin-bottom: 1rem; }
  #answer-text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0 0 .5rem; }
  #answer-text a.cite { text-decoration: none; font-weight: 600; }
  #answer-text .unknown { color: #b91c1c; }
  #sources li { padding: .35rem .5rem; border-top: 1px solid var(--line); font-size: .9rem; }
  #sources li:target { background: var(--mark); color: black; }
  footer { margin-top: 2rem; font-size: .8rem; color: var(--muted); }
</style>
</head>
<body>
<h1>FuncPipe search</h1>
<div id="status">connecting…</div>
<div id="token-row">
  <label>Token (this server needs one)<input id="token" type="password" autocomplete="off"></label>
  <button id="token-save" type="button">Use token</button>
</div>
<form id="search">
  <label id="q-label">Query<input id="q" name="q" type="search" placeholder="What are you looking for?" autofocus required></label>
  <label>Mode<select id="mode" name="mode">
    <option value="">index default</option>
    <option value="lexical">lexical (BM25)</option>
    <option value="vector">vector</option>
    <option value="hybrid">hybrid</option>
  </select></label>
  <label>Top k<input id="topk" name="topk" type="number" min="1" max="1000" value="5"></label>
  <label id="group-label"><input id="group" name="group" type="checkbox">one per document</label>
  <button type="submit">Search</button>
  <button id="ask" type="button" hidden title="Answer the query as a question with the server's chat model, citing the passages it comes from">Ask</button>
</form>
<div id="message" role="status"></div>
<section id="answer" hidden aria-live="polite"><p id="answer-text"></p><ol id="sources"></ol></section>
<ol id="results"></ol>
<footer>JSON API: <a href="/docs">/docs</a> · <a href="/openapi.json">/openapi.json</a></footer>
<script>
"use strict"
const $ = (id) => document.getElementById(id)
let token = sessionStorage.getItem("funcpipe-token") || ""

const call = async (method, path, body) => {
  const headers = { "content-type": "application/json" }
  if (token) headers.authorization = "Bearer " + token
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) })
  const data = await response.json().catch(() => ({ message: response.statusText }))
  if (response.status === 401) $("token-row").classList.add("shown")
  if (!response.ok) throw new Error(data.message || ("HTTP " + response.status))
  return data
}

/** Whether the server links results to their documents' text (serve --link-sources); from the status. */
let linkSources = false

/**
 * A link to a result's document as written: fetched with the token (a plain link would not carry it) and opened as
 * plain text in a new tab.
 */
const sourceLink = (r) => {
  const link = el("a", { href: "#", className: "source", textContent: r.source, dir: "auto" })
  link.addEventListener("click", (event) => {
    event.preventDefault()
    // The tab is opened now, while the click counts as the user's (a browser may block one opened after a fetch).
    const tab = window.open("", "_blank")
    const headers = token ? { authorization: "Bearer " + token } : {}
    fetch("/v1/documents/" + encodeURIComponent(r.doc_id) + "/text", { headers }).then(async (response) => {
      if (!response.ok) throw new Error((await response.json().catch(() => ({}))).message || "HTTP " + response.status)
      // Plain text, whatever the document holds: it is never run as a page of this origin.
      const text = new Blob([await response.text()], { type: "text/plain; charset=utf-8" })
      const url = URL.createObjectURL(text)
      if (tab) tab.location.href = url
      setTimeout(() => URL.revokeObjectURL(url), 60000)
    }).catch((error) => {
      if (tab) tab.close()
      fail(error)
    })
  })
  return link
}

/** About three lines of a result's passage, chosen around its matches. */
const PASSAGE_WIDTH = 320

const el = (tag, props, children) => {
  const node = document.createElement(tag)
  Object.assign(node, props || {})
  for (const child of children || []) node.append(child)
  return node
}

/** The chunk text with the highlighted spans (code points) marked, built as DOM nodes (never parsed as HTML). */
const marked = (text, spans) => {
  const points = Array.from(text)
  const parts = []
  let at = 0
  for (const [start, end] of spans || []) {
    if (start > at) parts.push(points.slice(at, start).join(""))
    parts.push(el("mark", { textContent: points.slice(start, end).join("") }))
    at = end
  }
  parts.push(points.slice(at).join(""))
  return parts
}

const num = (x) => x === null || x === undefined ? "–" : Number(x.toPrecision(6)).toString()

const explainView = (e) => {
  const rows = []
  if (e.bm25) {
    rows.push(el("p", { textContent: "BM25 " + num(e.bm25.score) + (e.bm25.terms.length ? " = sum of the terms:" : " (no query terms)") }))
    if (e.bm25.terms.length) {
      const head = el("tr", {}, ["term", "tf", "df", "idf", "score"].map((h) => el("th", { textContent: h })))
      const body = e.bm25.terms.map((t) => el("tr", {}, [t.term, t.tf, t.df, num(t.idf), num(t.score)].map((v) => el("td", { textContent: String(v) }))))
      rows.push(el("table", { className: "explain" }, [head, ...body]))
    }
  }
  if (e.cosine !== null) rows.push(el("p", { textContent: "cosine similarity " + num(e.cosine) }))
  if (e.fusion) {
    rows.push(el("p", { textContent: "fused " + e.fusion.method + " (alpha " + e.fusion.alpha + "): lexical rank " +
      (e.lexical_rank ?? "–") + " adds " + num(e.fusion.lexical) + ", vector rank " + (e.vector_rank ?? "–") + " adds " +
      num(e.fusion.vector) }))
  }
  return el("details", { className: "explain" }, [el("summary", { textContent: "explain score" }), ...rows])
}

const show = (answer) => {
  const list = $("results")
  list.replaceChildren()
  $("message").className = ""
  $("message").textContent = answer.results.length === 0
    ? "No results in " + answer.mode + " mode."
    : answer.results.length + " result" + (answer.results.length === 1 ? "" : "s") + " in " + answer.mode + " mode for “" + answer.query + "”"
  for (const r of answer.results) list.append(resultView(answer, r))
}

/** One result: its rank, score, title, doc id and span, the passage with its matches marked, and what else is there. */
const resultView = (answer, r) => {
  const meta = el("div", { className: "meta" }, [
    el("span", { className: "rank", textContent: "#" + r.rank }),
    el("span", { className: "score", textContent: "score " + r.score.toFixed(6) }),
    ...(r.title ? [el("span", { className: "title", textContent: r.title, dir: "auto" })] : []),
    el("span", { className: "doc", textContent: r.doc_id, dir: "auto" }),
    el("span", { className: "span", textContent: "[" + r.start + ", " + r.end + ")" }),
    ...(linkSources && r.source ? [sourceLink(r)] : [])
  ])
  const unmarked = (text) => text.replace(/[\\x60*_]/g, "").trim()
  const headings = r.section.length > 0 && !(r.section.length === 1 && unmarked(r.section[0]) === unmarked(r.title))
    ? r.section.join(" › ")
    : ""
  const where = [r.page ? "p. " + r.page : "", headings].filter((part) => part !== "").join(", ")
  const section = where ? [el("div", { className: "section", textContent: where, dir: "auto" })] : []
  const text = el("div", { className: "text", dir: "auto" }, marked(r.passage, r.passage_highlights))
  const more = r.more_in_document ? [moreView(answer, r)] : []
  return el("li", { className: "result" }, [meta, ...section, text, ...more, ...(r.explain ? [explainView(r.explain)] : [])])
}

/** A value as a rule's double-quoted text, in which only a quote and a backslash are escaped (each by a backslash). */
const ruleText = (value) => {
  const backslash = String.fromCharCode(92)
  return '"' + value.replaceAll(backslash, backslash + backslash).replaceAll('"', backslash + '"') + '"'
}

/**
 * "Also in this document": a button that shows, in place, the document's other matching passages, in their ranking
 * order (the same query, searched in that document alone).
 */
const moreView = (answer, r) => {
  const count = r.more_in_document
  const button = el("button", {
    type: "button",
    className: "more",
    textContent: "also in this document: " + count + " more passage" + (count === 1 ? "" : "s")
  })
  const box = el("div", {}, [button])
  button.addEventListener("click", () => {
    button.disabled = true
    const body = {
      text: answer.query,
      mode: answer.mode,
      top_k: count + 1,
      highlight: true,
      passage_width: PASSAGE_WIDTH,
      where: "doc_id = " + ruleText(r.doc_id)
    }
    call("POST", "/v1/query", body).then((found) => {
      const others = found.results.filter((o) => o.start !== r.start || o.end !== r.end)
      const items = others.map((o) =>
        el("li", {}, [
          el("div", { className: "meta" }, [
            el("span", { className: "score", textContent: "score " + o.score.toFixed(6) }),
            el("span", { className: "span", textContent: "[" + o.start + ", " + o.end + ")" })
          ]),
          el("div", { className: "text", dir: "auto" }, marked(o.passage, o.passage_highlights))
        ])
      )
      box.replaceChildren(el("ol", { className: "more-list" }, items))
    }, (error) => {
      button.disabled = false
      box.replaceChildren(button, el("div", { className: "text", textContent: error.message }))
    })
  })
  return box
}

const fail = (error) => {
  $("results").replaceChildren()
  $("message").className = "error"
  $("message").textContent = error.message
}

/** The answer's text with each [n] it cites as a link to source n (an unknown number marked, not linked). */
const citedText = (text, sources) => {
  const known = new Set(sources.map((s) => s.number))
  const cite = (n) => known.has(n)
    ? el("a", { className: "cite", href: "#source-" + n, textContent: String(n) })
    : el("span", { className: "unknown", title: "not one of the sources", textContent: String(n) })
  const parts = []
  let at = 0
  // [2], and [1, 3] as the server reads it: each number its own link.
  for (const match of text.matchAll(/\\[(\\d+(?:\\s*,\\s*\\d+)*)\\]/g)) {
    parts.push(text.slice(at, match.index), "[")
    match[1].split(",").forEach((n, i) => {
      if (i > 0) parts.push(", ")
      parts.push(cite(Number(n.trim())))
    })
    parts.push("]")
    at = match.index + match[0].length
  }
  parts.push(text.slice(at))
  return parts
}

/** The numbered sources the answer was given. */
const sourcesView = (sources) =>
  sources.map((s) =>
    el("li", { id: "source-" + s.number }, [
      el("div", { className: "meta" }, [
        el("span", { className: "rank", textContent: "[" + s.number + "]" }),
        ...(s.title ? [el("span", { className: "title", textContent: s.title, dir: "auto" })] : []),
        el("span", { className: "doc", textContent: s.doc_id, dir: "auto" }),
        el("span", { className: "span", textContent: "[" + s.start + ", " + s.end + ")" })
      ]),
      el("div", { className: "text", dir: "auto", textContent: s.text })
    ])
  )

/** The answer being streamed, stopped when another question or a search takes its place. */
let asking

/**
 * Asks the server's chat model: the answer's text appears as it streams in (server-sent events), then its citations
 * become links to the numbered sources listed under it.
 */
const ask = async () => {
  asking?.abort()
  const controller = new AbortController()
  asking = controller
  const headers = { "content-type": "application/json", accept: "text/event-stream" }
  if (token) headers.authorization = "Bearer " + token
  const body = { text: $("q").value, top_k: Math.min(Number($("topk").value) || 8, 100) }
  if ($("mode").value) body.mode = $("mode").value
  $("results").replaceChildren()
  $("message").className = ""
  $("message").textContent = "asking…"
  $("answer").hidden = false
  $("answer-text").replaceChildren()
  $("sources").replaceChildren()
  const response = await fetch("/v1/ask", { method: "POST", headers, body: JSON.stringify(body), signal: controller.signal })
  if (!response.ok) {
    $("answer").hidden = true
    if (response.status === 401) $("token-row").classList.add("shown")
    const data = await response.json().catch(() => ({ message: response.statusText }))
    throw new Error(data.message || ("HTTP " + response.status))
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ""
  let ended = false
  const handle = (event) => {
    if (event.type === "token") $("answer-text").append(event.text)
    else if (event.type === "done") {
      ended = true
      $("answer-text").replaceChildren(...citedText(event.answer, event.sources))
      $("sources").replaceChildren(...sourcesView(event.sources))
      $("message").textContent = event.sources.length + " source" + (event.sources.length === 1 ? "" : "s") + " given to the model"
    } else if (event.type === "error") {
      ended = true
      $("message").className = "error"
      $("message").textContent = event.message
    }
  }
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    // Events end with a blank line; a line may end with CR LF, LF or CR.
    buffer = (buffer + value).replace(/\\r\\n?/g, "\\n")
    let end
    while ((end = buffer.indexOf("\\n\\n")) >= 0) {
      const block = buffer.slice(0, end)
      buffer = buffer.slice(end + 2)
      const data = block.split("\\n").filter((line) => line.startsWith("data:")).map((line) => line.slice(5).trimStart())
      if (data.length > 0) handle(JSON.parse(data.join("\\n")))
    }
  }
  if (!ended) throw new Error("the answer broke off before it was complete")
}

$("ask").addEventListener("click", () => {
  if (!$("search").reportValidity()) return
  // A stopped answer is no failure: another has taken its place.
  ask().catch((error) => { if (error.name !== "AbortError") fail(error) })
})

const status = () =>
  call("GET", "/v1/status").then((s) => {
    linkSources = s.link_sources
    $("ask").hidden = !s.ask
    $("status").textContent = s.manifest
      ? s.index + ": " + s.manifest.documents + " documents, " + s.manifest.chunks + " chunks, model " + s.manifest.model
      : s.index + ": no index to answer from yet" + (s.reload_error ? " (" + s.reload_error.message + ")" : "")
  }, (error) => { $("status").textContent = error.message })

$("search").addEventListener("submit", (event) => {
  event.preventDefault()
  const body = {
    text: $("q").value,
    top_k: Number($("topk").value) || 5,
    explain: true,
    highlight: true,
    passage_width: PASSAGE_WIDTH
  }
  if ($("mode").value) body.mode = $("mode").value
  if ($("group").checked) body.group = "doc"
  $("message").textContent = "searching…"
  asking?.abort()
  $("answer").hidden = true
  call("POST", "/v1/query", body).then(show, fail)
})

// Enter submits from every field of the form, the mode's list included.
$("search").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && event.target instanceof HTMLSelectElement) {
    event.preventDefault()
    $("search").requestSubmit()
  }
})

$("token-save").addEventListener("click", () => {
  token = $("token").value
  sessionStorage.setItem("funcpipe-token", token)
  $("token-row").classList.remove("shown")
  status()
})

status()
</script>
</body>
</html>
`
