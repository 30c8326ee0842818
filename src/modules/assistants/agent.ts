import { research } from '../agents/catalog'
import type { AgentDefinition } from '../agents/types'
import type { AssistantPersona } from './persona'

/**
 * An assistant as an agent of a task (`assistant:<ref>` in `agents`): its instructions for the
 * model's turn, the researcher's search over its collections that the caller can read (none: no
 * search at all, never "all of the caller's"), and the plugins of its tools that the caller may run.
 */
export function assistantAgent(name: string, persona: AssistantPersona): AgentDefinition {
  const plugins = [...new Set(persona.tools.map((tool) => tool.split('__')[0]!))]
  return {
    name,
    role: persona.name,
    description: persona.description || `The assistant ${persona.name}`,
    instructions: persona.instructions.trim() || `You are ${persona.name}. Answer the task from the context given.`,
    plugins,
    work: (input) => research({ ...input, collections: persona.collections }, plugins),
  }
}
