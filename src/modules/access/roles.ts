/** A role an access list entry gives. */
export type ShareRole = 'viewer' | 'editor' | 'manager'
/** What a caller may do with a shared object: its owner, or the highest role an entry gives them. */
export type Access = 'owner' | ShareRole

export const SHARE_ROLES: readonly ShareRole[] = ['viewer', 'editor', 'manager']
export const ACCESS_RANK: Record<Access, number> = { viewer: 1, editor: 2, manager: 3, owner: 4 }

export type PrincipalType = 'user' | 'group' | 'everyone'

/** An access list entry as stored: `principalId` is a user's or a group's id ('' for everyone). */
export interface ShareEntry {
  type: PrincipalType
  principalId: string
  role: ShareRole
}

/** An entry as `GET …/access` shows it: with the user's email or the group's name. */
export interface ShareView {
  type: PrincipalType
  id?: string
  email?: string
  name?: string
  role: ShareRole
}

/**
 * The SQL condition "entry s reaches user $USER" (a user entry, a group they are in, everyone);
 * `user` is the placeholder of their id. EXISTS, not IN: SQLite runs it as an index probe per
 * entry, where IN builds the member's group list anew on every call.
 */
export function reachesUser(user: string): string {
  return `(s.principal_type = 'everyone' OR (s.principal_type = 'user' AND s.principal_id = ${user})
    OR (s.principal_type = 'group' AND EXISTS (SELECT 1 FROM group_members gm WHERE gm.group_id = s.principal_id AND gm.user_id = ${user})))`
}

/** The highest of some roles, or null (an aggregate in SQL costs more than the few rows it reads). */
export function highestRole(roles: Iterable<ShareRole>): ShareRole | null {
  let best: ShareRole | null = null
  for (const role of roles) if (best === null || ACCESS_RANK[role] > ACCESS_RANK[best]) best = role
  return best
}

/** Rows of (object, role), one per entry that reaches the user: one per object with its highest role, in first-seen order. */
export function highestPerObject<T extends { id: number | string; role: ShareRole }>(rows: T[]): T[] {
  const best = new Map<number | string, T>()
  for (const row of rows) {
    const seen = best.get(row.id)
    if (!seen || ACCESS_RANK[row.role] > ACCESS_RANK[seen.role]) best.set(row.id, row)
  }
  return [...best.values()]
}

export function isAdminRoles(roles: string | null | undefined): boolean {
  if (!roles) return false
  try {
    const parsed = JSON.parse(roles) as unknown
    return Array.isArray(parsed) && parsed.includes('admin')
  } catch {
    return false
  }
}

/** An entry as the API shows it. */
export function shareView(row: { type: ShareView['type']; id: string; role: ShareRole; email: string | null; name: string | null }): ShareView {
  if (row.type === 'everyone') return { type: 'everyone', role: row.role }
  if (row.type === 'user') return { type: 'user', id: row.id, email: row.email ?? '', role: row.role }
  return { type: 'group', id: row.id, name: row.name ?? '', role: row.role }
}
