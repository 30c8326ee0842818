import stored from './params.json'
import type { RankingParams } from './scoring'

export interface FittedParams extends RankingParams {
  /** How the values were found: the labelled set's checking-half figures, when and on what. */
  fitted?: Record<string, unknown>
}

const table = stored as { default: RankingParams; embedders: Record<string, FittedParams> }

/** The fusion settings fitted for an embedder, or the defaults for one not fitted yet. */
export function rankingParams(embedderId: string): RankingParams {
  return table.embedders[embedderId] ?? table.default
}

/** Whether `embedderId` has settings of its own (fitted on the labelled set). */
export function isFitted(embedderId: string): boolean {
  return embedderId in table.embedders
}
