/**
 * The settings an index run writes with: those it names, else the index's own (a rebuild's are those of the index it
 * replaces), else the defaults for a new index; and what its manifest records of them.
 */

import { AnalyzerConfig } from "@funcpipe/domain/Config"
import {
  type AnnConfig,
  DEFAULT_VECTOR_STORAGE,
  type IndexManifest,
  type IndexSettings,
  vectorStorageOf
} from "@funcpipe/domain/Manifest"
import { Option, Result } from "effect"
import { CodesNeedGraphs } from "./IndexErrors.ts"

/** What a run asks for, before the index's own settings fill in what it does not name. */
export interface AskedSettings {
  readonly location: string
  readonly settings: IndexSettings
  /** The rows the graphs are walked over, as the run names them (`--vector-codes`); absent, the index's own. */
  readonly vectorCodes: "i8" | "float32" | undefined
  readonly rebuild: boolean
  /** The run named no analyzer version: an existing index keeps its own. */
  readonly analyzerVersionFromIndex: boolean
}

/** The settings a run writes with, and whether its manifest names no vector storage (see `recordedSettings`). */
export interface RunSettings {
  readonly settings: IndexSettings
  /**
   * The index was made before vector storage was a setting and the run names none: it stores exactly, and its
   * manifest goes on naming none, so that a later rebuild moves it to the default.
   */
  readonly storageUnnamed: boolean
}

/** The approximate index a run writes with: the one it names (`--ann`), else the index's own. */
const annOf = (asked: AskedSettings, own: Option.Option<IndexManifest>) =>
  asked.settings.ann ?? (Option.isSome(own) ? own.value.ann : undefined)

/** `CodesNeedGraphs` when the run names codes and the index will have no graphs to walk over them. */
export const codesWithoutGraphs = (
  asked: AskedSettings,
  own: Option.Option<IndexManifest>
): CodesNeedGraphs | undefined => {
  const ann = annOf(asked, own)
  return asked.vectorCodes !== undefined && (ann === undefined || ann === "exact")
    ? new CodesNeedGraphs({ location: asked.location })
    : undefined
}

/**
 * The settings a run writes with, given the index's manifest under the lock (`existing`; none for a rebuild's new
 * file) and the one a rebuild replaces (`replaced`). Pure.
 */
export const runSettings = (
  asked: AskedSettings,
  existing: Option.Option<IndexManifest>,
  replaced: Option.Option<IndexManifest>
): Result.Result<RunSettings, CodesNeedGraphs> => {
  let settings = asked.settings
  if (Option.isSome(existing) && !asked.rebuild && asked.analyzerVersionFromIndex) {
    const { version } = existing.value.analyzer
    const analyzer = new AnalyzerConfig({
      stopWords: settings.analyzer.stopWords,
      stemmer: settings.analyzer.stemmer,
      ...(version === undefined ? {} : { version })
    })
    settings = { ...settings, analyzer }
  }
  // The index's own settings: a rebuild writes a new file, so they are those of the file it replaces.
  const own = Option.orElse(existing, () => replaced)
  const refused = codesWithoutGraphs(asked, own)
  if (refused !== undefined) return Result.fail(refused)
  // The vector index is the index's own unless the run names one (`--ann`), and so are the rows its graphs are
  // walked over unless the run names them (`--vector-codes`).
  const ann = annOf(asked, own)
  settings = { ...settings, ann: ann === undefined || ann === "exact" ? ann : withCodes(ann, asked, own) }
  // So is the vector storage: `float32` for a new index, `exact` for one made before it was a setting (which a
  // rebuild moves to the default).
  if (settings.vectorStorage !== undefined) return Result.succeed({ settings, storageUnnamed: false })
  const named = Option.isSome(own) ? own.value.vectorStorage : undefined
  const unnamed = named === undefined && Option.isSome(existing) && !asked.rebuild
  const vectorStorage = named ?? (unnamed ? vectorStorageOf(existing.value) : DEFAULT_VECTOR_STORAGE)
  return Result.succeed({ settings: { ...settings, vectorStorage }, storageUnnamed: unnamed })
}

/** The graphs' setting with the rows they are walked over: as the run names them, else as the index has them. */
const withCodes = (ann: AnnConfig, asked: AskedSettings, own: Option.Option<IndexManifest>): AnnConfig => {
  const named = asked.vectorCodes ?? (typeof asked.settings.ann === "object" ? asked.settings.ann.codes : undefined)
  const ownCodes = Option.isSome(own) && typeof own.value.ann === "object" ? own.value.ann.codes : undefined
  const codes = named === undefined ? ownCodes : named === "i8" ? "i8" : undefined
  const { codes: _, ...graphs } = ann
  return codes === undefined ? graphs : { ...graphs, codes }
}

/** The settings as a run's manifest records them: without a vector storage where the index names none. */
export const recordedSettings = ({ settings, storageUnnamed }: RunSettings): IndexSettings => {
  if (!storageUnnamed) return settings
  const { vectorStorage: _, ...rest } = settings
  return rest
}
