import { signal } from '@preact/signals'

/** An assistant as GET /assistants lists it. */
export interface Assistant {
  id: string
  name: string
  description: string
  instructions: string
  collections: { id: string; name: string; owner: { id: string; email: string } }[]
  collectionsHidden: number
  tools: string[]
  model: string | null
  temperature: number | null
  starters: string[]
  owner: { id: string; email: string }
  access: 'owner' | 'manager' | 'editor' | 'viewer'
  builtin: boolean
}

/** The reference that names it for this user: its name when theirs, `<owner email>/<name>` when shared, `builtin:<name>` for a built-in agent. */
export const assistantRef = (a: Assistant) => (a.builtin ? a.id : a.access === 'owner' ? a.name : `${a.owner.email}/${a.name}`)
/** How a picker shows it. */
export const assistantLabel = (a: Assistant) => (a.builtin ? `${a.name} (built-in agent)` : a.access === 'owner' ? a.name : `${a.name} — shared by ${a.owner.email}`)
export const canEditAssistant = (a: Assistant) => !a.builtin && a.access !== 'viewer'
export const canManageAssistant = (a: Assistant) => !a.builtin && (a.access === 'owner' || a.access === 'manager')

/** The assistant a "Chat" button picked for the next new chat (read once by the chat page). */
export const pickedAssistant = signal<string>('')
