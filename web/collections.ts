/** A collection as GET /rag/collections lists it: the caller's own, or one shared with them. */
export interface Collection {
  id: string
  name: string
  owner: { id: string; email: string }
  access: 'owner' | 'manager' | 'editor' | 'viewer'
  documents: number
  chunks: number
  createdAt: string
}

/** What requests name a collection by: its name when it is the caller's, else `<owner email>/<name>` (never ambiguous). */
export const refOf = (c: Collection) => (c.access === 'owner' ? c.name : `${c.owner.email}/${c.name}`)

/** How pickers show it: a shared one marked with its owner (and the caller's role). */
export const labelOf = (c: Collection) => (c.access === 'owner' ? c.name : `${c.name} — shared by ${c.owner.email} (${c.access})`)

/** Whether the caller may add and delete documents (editor and up). */
export const canWrite = (c: Collection) => c.access !== 'viewer'
/** Whether the caller may change access and delete the collection (manager and up). */
export const canManage = (c: Collection) => c.access === 'owner' || c.access === 'manager'
