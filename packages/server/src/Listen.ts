/** Why the server could not listen, in words for someone who has never seen the code, and who holds a port. */

import { readdirSync, readFileSync, readlinkSync } from "node:fs"
import { errorCode } from "@funcpipe/pipeline/platform/SystemReason"
import { Schema } from "effect"

/**
 * The process listening on a TCP port of this machine, as `pid 1234 (node …)`, when Linux's `/proc` tells (the
 * socket's inode in `/proc/net/tcp*`, then the process holding it); `undefined` where it does not or may not.
 */
export const portHolder = (port: number): string | undefined => {
  try {
    const hex = port.toString(16).toUpperCase().padStart(4, "0")
    const inodes = new Set<string>()
    for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
      let text = ""
      try {
        text = readFileSync(table, "utf8")
      } catch {
        continue
      }
      for (const line of text.split("\n").slice(1)) {
        const fields = line.trim().split(/\s+/)
        // local address "0100007F:1E14", state 0A (LISTEN), inode in the tenth field.
        if (fields[1]?.endsWith(`:${hex}`) && fields[3] === "0A" && fields[9] !== undefined) inodes.add(fields[9])
      }
    }
    if (inodes.size === 0) return undefined
    for (const pid of readdirSync("/proc")) {
      if (!/^\d+$/.test(pid)) continue
      let fds: Array<string> = []
      try {
        fds = readdirSync(`/proc/${pid}/fd`)
      } catch {
        continue
      }
      for (const fd of fds) {
        let target = ""
        try {
          target = readlinkSync(`/proc/${pid}/fd/${fd}`)
        } catch {
          continue
        }
        const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1]
        if (inode !== undefined && inodes.has(inode)) {
          const command = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ")
          return `pid ${pid}${command === "" ? "" : ` (${command.length > 80 ? `${command.slice(0, 79)}…` : command})`}`
        }
      }
    }
  } catch {
    return undefined
  }
  return undefined
}

/** The server could not listen at `host:port`. */
export class ListenFailed extends Schema.TaggedError<ListenFailed>()("ListenFailed", {
  host: Schema.String,
  port: Schema.Number,
  code: Schema.NullOr(Schema.String),
  detail: Schema.String,
  holder: Schema.NullOr(Schema.String)
}) {
  override get message(): string {
    const at = `${this.host}:${this.port}`
    switch (this.code) {
      case "EADDRINUSE":
        return (
          `cannot listen on ${at}: the port is already in use` +
          `${this.holder === null ? " (by another funcpipe serve or another program)" : ` by ${this.holder}`}; ` +
          `stop that program, or pick another port with --port (0 picks a free one)`
        )
      case "EADDRNOTAVAIL":
        return (
          `cannot listen on ${at}: ${this.host} is not an address of this machine; give one of its addresses ` +
          `(127.0.0.1 for this machine only, 0.0.0.0 for every network it is on)`
        )
      case "ENOTFOUND":
      case "EAI_AGAIN":
      case "EAI_NONAME":
        return (
          `cannot listen on ${at}: the host name ${this.host} is unknown (it does not resolve to an address); give ` +
          `an IP address, or a name of this machine`
        )
      case "EACCES":
      case "EPERM":
        return this.port > 0 && this.port < 1024
          ? `cannot listen on ${at}: permission denied (ports below 1024 need administrator rights); pick a port of ` +
              `1024 or more with --port`
          : `cannot listen on ${at}: permission denied (a security policy of this machine refuses it); pick another ` +
              `port with --port, or ask the machine's administrator`
      default:
        return `cannot listen on ${at}: ${this.detail}`
    }
  }
}

/** The `ListenFailed` for what a listen failed with. */
export const listenFailed = (host: string, port: number, cause: unknown): ListenFailed => {
  const code = errorCode(cause) ?? null
  return new ListenFailed({
    host,
    port,
    code,
    detail: cause instanceof Error && cause.message !== "" ? cause.message : String(cause),
    holder: code === "EADDRINUSE" ? (portHolder(port) ?? null) : null
  })
}
