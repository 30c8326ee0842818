import type { MaybePromise } from '../../db/maybe-promise'

/** Where a group comes from: made by an admin, or kept in step with a single sign-on provider. */
export type GroupSource = 'local' | 'oidc' | 'ldap'
export const GROUP_SOURCES: readonly GroupSource[] = ['local', 'oidc', 'ldap']

export interface GroupRow {
  id: string
  name: string
  description: string
  source: GroupSource
  /** The provider's group name or DN; null for a local group. */
  external_id: string | null
  created_at: string
  updated_at: string
  /** How many members it has. */
  members: number
}

export interface MemberRow {
  id: string
  email: string
  added_at: string
}

/** What replaceMemberships changed: the ids of the groups created, joined and left. */
export interface MembershipChange {
  created: { id: string; name: string }[]
  joined: string[]
  left: string[]
}

/**
 * Groups and their members (tables `groups`, `group_members`, migration 40), whatever the backend.
 * The SQLite adapter answers synchronously; the PostgreSQL adapter with promises.
 */
export interface GroupStore {
  readonly asynchronous: boolean
  /** Adds a group; false when its name is taken (nothing written). */
  insert(row: Omit<GroupRow, 'members'>): MaybePromise<boolean>
  /** Every group, by name. */
  list(): MaybePromise<GroupRow[]>
  /** The groups a user is in, by name. */
  listOf(userId: string): MaybePromise<GroupRow[]>
  get(id: string): MaybePromise<GroupRow | null>
  byName(name: string): MaybePromise<GroupRow | null>
  /** Changes name and/or description: 'missing' (no such group), 'taken' (the name is another group's) or 'updated'. */
  update(id: string, change: { name?: string; description?: string }, at: string): MaybePromise<'missing' | 'taken' | 'updated'>
  /** Deletes a group (its memberships go by cascade); the ids of its members then, or null when there was no such group. */
  remove(id: string): MaybePromise<string[] | null>
  /** Members of a group, by email. */
  members(groupId: string): MaybePromise<MemberRow[]>
  /** Adds a member; false when they already were one. */
  addMember(groupId: string, userId: string, at: string): MaybePromise<boolean>
  /** Removes a member; false when they were not one. */
  removeMember(groupId: string, userId: string): MaybePromise<boolean>
  /** The ids of the groups a user is in (unordered). */
  groupIdsOf(userId: string): MaybePromise<string[]>
  /**
   * Makes a user's memberships of `source` groups exactly `externalIds` (provider group names or
   * DNs), in one transaction: a group of that source missing for an external id is created (named
   * after it; `<name> (<source>)` when a group of another source has the name); memberships of
   * other sources, `local` above all, are left as they are.
   */
  replaceMemberships(userId: string, source: Exclude<GroupSource, 'local'>, externalIds: string[], at: string): MaybePromise<MembershipChange>
}

/** The name a provider's group gets here: its name, or, taken by a group of another source, `<name> (<source>)`. */
export function syncedGroupName(externalId: string, source: GroupSource, taken: (name: string) => boolean): string {
  const base = externalId.slice(0, 64)
  if (!taken(base)) return base
  const suffix = ` (${source})`
  const named = `${base.slice(0, 64 - suffix.length)}${suffix}`
  if (!taken(named)) return named
  for (let n = 2; ; n++) {
    const numbered = `${base.slice(0, 64 - suffix.length - String(n).length - 1)} ${n}${suffix}`
    if (!taken(numbered)) return numbered
  }
}
