import type { Generator } from './types'

/** The longest reply asked of a model. */
export const MAX_REPLY_TOKENS = 512

/**
 * Tokens kept for the reply: 512, or a quarter of the model's context when that is smaller, so a
 * small model still has most of its context for the prompt.
 */
export function replyBudget(generator: Pick<Generator, 'contextLength'>): number {
  return Math.max(1, Math.min(MAX_REPLY_TOKENS, Math.floor(generator.contextLength / 4)))
}

/** Tokens a prompt may use so that `replyBudget` still fits in the model's context. */
export function promptBudget(generator: Pick<Generator, 'contextLength'>): number {
  return generator.contextLength - replyBudget(generator)
}
