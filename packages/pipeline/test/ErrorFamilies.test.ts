/** The error families: each guard takes every member of its family and nothing else, lookalikes included. */

import { assert, describe, it } from "@effect/vitest"
import { InvalidInput } from "@funcpipe/domain/Decode"
import { EmbedFailure, isModelError, ModelUnavailable, UnknownModel } from "../src/models/ModelErrors.ts"
import {
  isIndexRunError,
  NothingKept,
  NothingToIndex,
  PruneNeeded,
  SettingsChanged
} from "../src/programs/IndexErrors.ts"
import {
  DimensionMismatch,
  IndexMissing,
  isQueryError,
  ModelMismatch,
  QueryFilterInvalid,
  ZeroVector
} from "../src/search/QueryErrors.ts"
import {
  ForeignSchema,
  IndexBusy,
  IndexCorrupt,
  IndexCredentialsRefused,
  IndexTooNew,
  IndexTooOld,
  IndexUnreachable,
  isStoreError,
  NotAnIndex,
  StoreFailure
} from "../src/store/StoreErrors.ts"

const location = "/tmp/index.db"

const families = {
  store: {
    guard: isStoreError,
    members: [
      new NotAnIndex({ location }),
      new IndexCorrupt({ location, detail: "a page is torn" }),
      new IndexTooNew({ location, found: 9, supported: 4 }),
      new IndexTooOld({ location, found: 1, supported: 4 }),
      new IndexBusy({ location }),
      new StoreFailure({ location, reason: "the disk is full" }),
      new IndexUnreachable({ location, reason: "connection refused" }),
      new IndexCredentialsRefused({ location }),
      new ForeignSchema({ location, schema: "public", tables: ["users"] })
    ]
  },
  query: {
    guard: isQueryError,
    members: [
      new InvalidInput({ subject: "query", detail: "the query is blank" }),
      new ZeroVector({ length: 16 }),
      new DimensionMismatch({ expected: 16, actual: 100 }),
      new ModelMismatch({ index: "local-sha256", query: "glove-100d" }),
      new IndexMissing({ location }),
      new QueryFilterInvalid({ reason: "it reads body" })
    ]
  },
  model: {
    guard: isModelError,
    members: [
      new UnknownModel({ name: "no-such-model" }),
      new ModelUnavailable({ model: "glove-100d", reason: "not installed" }),
      new EmbedFailure({ model: "openai:x", reason: "the service is down" })
    ]
  },
  run: {
    guard: isIndexRunError,
    members: [
      new SettingsChanged({ location, detail: "the chunk size changed" }),
      new PruneNeeded({ location, deleted: 9, stored: 10, reason: "too many" }),
      new NothingToIndex({ location, skipped: 1, first: "a.md: not UTF-8" }),
      new NothingKept({ location, rule: "categories = x", dropped: 3 })
    ]
  }
}

describe("error families", () => {
  for (const [name, { guard, members }] of Object.entries(families)) {
    it(`the ${name} guard takes its ${members.length} members and nothing else`, () => {
      for (const member of members) assert.isTrue(guard(member), `${name}: ${member._tag}`)
      for (const [other, family] of Object.entries(families)) {
        if (other === name) continue
        for (const member of family.members) assert.isFalse(guard(member), `${name} takes ${other}'s ${member._tag}`)
      }
      // A plain object with a member's tag and fields is not one, nor is an ordinary error.
      assert.isFalse(guard({ ...members[0]!, _tag: members[0]!._tag }))
      assert.isFalse(guard(new Error(members[0]!.message)))
      assert.isFalse(guard(undefined))
    })
  }

  it("every member has a message a person can read", () => {
    for (const { members } of Object.values(families)) {
      for (const member of members) assert.match(member.message, /^\S.{10,}/, member._tag)
    }
  })
})
