/**
 * An assistant as one caller uses it now: its collections that this caller can read (as
 * references the collection resolver takes), how many it left out, and its tools this caller
 * could run. Built afresh for every request: a share removed counts at the next one.
 */
export interface AssistantPersona {
  id: string
  name: string
  description: string
  instructions: string
  collections: string[]
  collectionsSkipped: number
  tools: string[]
  model: string | null
  temperature: number | null
  starters: string[]
  builtin: boolean
  /** Its collections are public ids not yet checked (chat's grounding checks and counts them). */
  deferred?: boolean
}
