/**
 * A scripted fake of an OpenAI-compatible Chat Completions service on 127.0.0.1, for tests: each request is answered
 * as its number says (JSON with a status, or server-sent events, whole or dropped midway), and recorded.
 */
import { createServer, type ServerResponse } from "node:http"
import { Effect } from "effect"
import { listenOnLoopback } from "./Loopback.ts"

export type Reply =
  | { readonly status: number; readonly headers?: Record<string, string>; readonly body: string }
  /** Events; then the answer's end, or (`drop`) a lost connection, or (`stall`) nothing more, the connection open. */
  | { readonly events: ReadonlyArray<string>; readonly drop?: boolean; readonly stall?: boolean }
  /** No answer at all: the request is read and the connection left open. */
  | { readonly silent: true }

/**
 * A fake service answering request `n` (from 1) with `reply(n)`; it records each request's body and auth header, and
 * counts the answers whose client went away before they ended (`abandoned`).
 */
export const fakeChatService = (reply: (n: number) => Reply) =>
  Effect.gen(function* () {
    const seen: Array<{ readonly auth: string | undefined; readonly body: Record<string, unknown> }> = []
    const state = { abandoned: 0 }
    const send = (res: ServerResponse, r: Reply) => {
      res.on("close", () => {
        if (!res.writableFinished) state.abandoned++
      })
      if ("silent" in r) return
      if ("status" in r) {
        res.writeHead(r.status, { "content-type": "application/json", ...r.headers }).end(r.body)
        return
      }
      res.writeHead(200, { "content-type": "text/event-stream" })
      const events = r.events.map((event) => `data: ${event}\n\n`).join("")
      // A dropped answer: its events reach the client, then the connection goes without the answer's end.
      if (r.drop === true) res.write(events, () => res.socket?.destroy())
      else if (r.stall === true) res.write(events)
      else res.end(events)
    }
    const server = createServer((req, res) => {
      let raw = ""
      req.on("data", (chunk) => (raw += chunk))
      req.on("end", () => {
        seen.push({ auth: req.headers.authorization, body: JSON.parse(raw) as Record<string, unknown> })
        send(res, reply(seen.length))
      })
    })
    const port = yield* listenOnLoopback(server)
    return {
      baseUrl: `http://127.0.0.1:${port}/v1`,
      seen,
      /** Answers whose client closed the connection before they ended. */
      get abandoned() {
        return state.abandoned
      }
    }
  })

/** A streamed answer's event holding `content`. */
export const chunkEvent = (content: string) => JSON.stringify({ choices: [{ delta: { content } }] })
