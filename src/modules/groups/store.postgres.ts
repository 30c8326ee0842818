import { randomUUID } from 'node:crypto'
import type { Postgres } from '../../db/postgres'
import { type GroupRow, type GroupSource, type GroupStore, type MemberRow, type MembershipChange, syncedGroupName } from './store'

const SELECT_GROUPS = `
  SELECT g.id, g.name, g.description, g.source, g.external_id, g.created_at, g.updated_at,
         (SELECT count(*) FROM group_members m WHERE m.group_id = g.id)::int AS members
  FROM groups g`

/** Groups in PostgreSQL (UAGENT_DATABASE_URL), shared by every replica. */
export class PostgresGroupStore implements GroupStore {
  readonly asynchronous = true

  constructor(private readonly sql: Postgres) {}

  async insert(row: Omit<GroupRow, 'members'>): Promise<boolean> {
    const result = await this.sql`
      INSERT INTO groups (id, name, description, source, external_id, created_at, updated_at)
      VALUES (${row.id}, ${row.name}, ${row.description}, ${row.source}, ${row.external_id}, ${row.created_at}, ${row.updated_at})
      ON CONFLICT (name) DO NOTHING`
    return result.count === 1
  }

  async list(): Promise<GroupRow[]> {
    return [...(await this.sql.unsafe(`${SELECT_GROUPS} ORDER BY g.name COLLATE "C"`))]
  }

  async listOf(userId: string): Promise<GroupRow[]> {
    return [...(await this.sql.unsafe(`${SELECT_GROUPS} WHERE g.id IN (SELECT group_id FROM group_members WHERE user_id = $1) ORDER BY g.name COLLATE "C"`, [userId]))]
  }

  async get(id: string): Promise<GroupRow | null> {
    const rows: GroupRow[] = await this.sql.unsafe(`${SELECT_GROUPS} WHERE g.id = $1`, [id])
    return rows[0] ?? null
  }

  async byName(name: string): Promise<GroupRow | null> {
    const rows: GroupRow[] = await this.sql.unsafe(`${SELECT_GROUPS} WHERE g.name = $1`, [name])
    return rows[0] ?? null
  }

  async update(id: string, change: { name?: string; description?: string }, at: string): Promise<'missing' | 'taken' | 'updated'> {
    try {
      return await this.sql.begin(async (tx) => {
        const [group] = await tx`SELECT id FROM groups WHERE id = ${id} FOR UPDATE`
        if (!group) return 'missing' as const
        if (change.name !== undefined) {
          const [other] = await tx`SELECT 1 FROM groups WHERE name = ${change.name} AND id <> ${id}`
          if (other) return 'taken' as const
        }
        await tx`UPDATE groups SET name = coalesce(${change.name ?? null}, name), description = coalesce(${change.description ?? null}, description), updated_at = ${at} WHERE id = ${id}`
        return 'updated' as const
      })
    } catch (error) {
      // Another server took the name between the check and the update.
      const { errno, code } = error as { errno?: string; code?: string }
      if (errno === '23505' || code === '23505') return 'taken'
      throw error
    }
  }

  async remove(id: string): Promise<string[] | null> {
    return this.sql.begin(async (tx) => {
      const members: { user_id: string }[] = await tx`SELECT user_id FROM group_members WHERE group_id = ${id}`
      const deleted = await tx`DELETE FROM groups WHERE id = ${id}`
      return deleted.count === 1 ? members.map((row) => row.user_id) : null
    })
  }

  async members(groupId: string): Promise<MemberRow[]> {
    return [...(await this.sql`SELECT u.id, u.email, m.added_at FROM group_members m JOIN users u ON u.id = m.user_id WHERE m.group_id = ${groupId} ORDER BY u.email`)]
  }

  async addMember(groupId: string, userId: string, at: string): Promise<boolean> {
    return (await this.sql`INSERT INTO group_members (group_id, user_id, added_at) VALUES (${groupId}, ${userId}, ${at}) ON CONFLICT DO NOTHING`).count === 1
  }

  async removeMember(groupId: string, userId: string): Promise<boolean> {
    return (await this.sql`DELETE FROM group_members WHERE group_id = ${groupId} AND user_id = ${userId}`).count === 1
  }

  async groupIdsOf(userId: string): Promise<string[]> {
    const rows: { group_id: string }[] = await this.sql`SELECT group_id FROM group_members WHERE user_id = ${userId}`
    return rows.map((row) => row.group_id)
  }

  async replaceMemberships(userId: string, source: Exclude<GroupSource, 'local'>, externalIds: string[], at: string): Promise<MembershipChange> {
    const wanted = [...new Set(externalIds)]
    return this.sql.begin(async (tx) => {
      // One sync at a time creates groups, so that two replicas signing in two members of a new
      // provider group make it once.
      await tx`SELECT pg_advisory_xact_lock(hashtext('uagent:groups:sync'))`
      const change: MembershipChange = { created: [], joined: [], left: [] }
      const names = new Set((await tx`SELECT name FROM groups`).map((row: { name: string }) => row.name))
      const wantedIds = new Set<string>()
      for (const externalId of wanted) {
        let [group]: { id: string }[] = await tx`SELECT id FROM groups WHERE source = ${source} AND external_id = ${externalId}`
        if (!group) {
          const name = syncedGroupName(externalId, source, (candidate) => names.has(candidate))
          names.add(name)
          group = { id: randomUUID() }
          await tx`INSERT INTO groups (id, name, description, source, external_id, created_at, updated_at) VALUES (${group.id}, ${name}, '', ${source}, ${externalId}, ${at}, ${at})`
          change.created.push({ id: group.id, name })
        }
        wantedIds.add(group.id)
        const added = await tx`INSERT INTO group_members (group_id, user_id, added_at) VALUES (${group.id}, ${userId}, ${at}) ON CONFLICT DO NOTHING`
        if (added.count === 1) change.joined.push(group.id)
      }
      const current: { id: string }[] = await tx`SELECT g.id FROM group_members m JOIN groups g ON g.id = m.group_id WHERE m.user_id = ${userId} AND g.source = ${source}`
      for (const { id } of current) {
        if (wantedIds.has(id)) continue
        await tx`DELETE FROM group_members WHERE group_id = ${id} AND user_id = ${userId}`
        change.left.push(id)
      }
      return change
    })
  }
}
