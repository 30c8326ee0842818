import type { Database } from 'bun:sqlite'
import { randomUUID } from 'node:crypto'
import { type GroupRow, type GroupSource, type GroupStore, type MemberRow, type MembershipChange, syncedGroupName } from './store'

const SELECT_GROUPS = `
  SELECT g.id, g.name, g.description, g.source, g.external_id, g.created_at, g.updated_at,
         (SELECT count(*) FROM group_members m WHERE m.group_id = g.id) AS members
  FROM groups g`

/** Groups in the server's SQLite database: every call answers at once. */
export class SqliteGroupStore implements GroupStore {
  readonly asynchronous = false
  private readonly idsQuery

  constructor(private readonly db: Database) {
    this.idsQuery = db.query<{ group_id: string }, [string]>('SELECT group_id FROM group_members WHERE user_id = ?')
  }

  insert(row: Omit<GroupRow, 'members'>): boolean {
    const result = this.db.run(
      'INSERT INTO groups (id, name, description, source, external_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING',
      [row.id, row.name, row.description, row.source, row.external_id, row.created_at, row.updated_at],
    )
    return result.changes === 1
  }

  list(): GroupRow[] {
    return this.db.query<GroupRow, []>(`${SELECT_GROUPS} ORDER BY g.name`).all()
  }

  listOf(userId: string): GroupRow[] {
    return this.db.query<GroupRow, [string]>(`${SELECT_GROUPS} WHERE g.id IN (SELECT group_id FROM group_members WHERE user_id = ?) ORDER BY g.name`).all(userId)
  }

  get(id: string): GroupRow | null {
    return this.db.query<GroupRow, [string]>(`${SELECT_GROUPS} WHERE g.id = ?`).get(id)
  }

  byName(name: string): GroupRow | null {
    return this.db.query<GroupRow, [string]>(`${SELECT_GROUPS} WHERE g.name = ?`).get(name)
  }

  update(id: string, change: { name?: string; description?: string }, at: string): 'missing' | 'taken' | 'updated' {
    return this.db
      .transaction((): 'missing' | 'taken' | 'updated' => {
        if (!this.db.query('SELECT 1 FROM groups WHERE id = ?').get(id)) return 'missing'
        if (change.name !== undefined && this.db.query('SELECT 1 FROM groups WHERE name = ? AND id <> ?').get(change.name, id)) return 'taken'
        this.db.run('UPDATE groups SET name = coalesce(?, name), description = coalesce(?, description), updated_at = ? WHERE id = ?', [
          change.name ?? null,
          change.description ?? null,
          at,
          id,
        ])
        return 'updated'
      })
      .immediate()
  }

  remove(id: string): string[] | null {
    return this.db
      .transaction(() => {
        if (!this.db.query('SELECT 1 FROM groups WHERE id = ?').get(id)) return null
        const members = this.db.query<{ user_id: string }, [string]>('SELECT user_id FROM group_members WHERE group_id = ?').all(id)
        this.db.run('DELETE FROM groups WHERE id = ?', [id])
        return members.map((row) => row.user_id)
      })
      .immediate()
  }

  members(groupId: string): MemberRow[] {
    return this.db
      .query<MemberRow, [string]>('SELECT u.id, u.email, m.added_at FROM group_members m JOIN users u ON u.id = m.user_id WHERE m.group_id = ? ORDER BY u.email')
      .all(groupId)
  }

  addMember(groupId: string, userId: string, at: string): boolean {
    return this.db.run('INSERT INTO group_members (group_id, user_id, added_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING', [groupId, userId, at]).changes === 1
  }

  removeMember(groupId: string, userId: string): boolean {
    return this.db.run('DELETE FROM group_members WHERE group_id = ? AND user_id = ?', [groupId, userId]).changes === 1
  }

  groupIdsOf(userId: string): string[] {
    return this.idsQuery.all(userId).map((row) => row.group_id)
  }

  replaceMemberships(userId: string, source: Exclude<GroupSource, 'local'>, externalIds: string[], at: string): MembershipChange {
    const wanted = [...new Set(externalIds)]
    return this.db
      .transaction((): MembershipChange => {
        const change: MembershipChange = { created: [], joined: [], left: [] }
        const wantedIds = new Set<string>()
        for (const externalId of wanted) {
          let group = this.db.query<{ id: string }, [string, string]>('SELECT id FROM groups WHERE source = ? AND external_id = ?').get(source, externalId)
          if (!group) {
            const name = syncedGroupName(externalId, source, (candidate) => this.db.query('SELECT 1 FROM groups WHERE name = ?').get(candidate) !== null)
            group = { id: randomUUID() }
            this.db.run('INSERT INTO groups (id, name, description, source, external_id, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)', [group.id, name, '', source, externalId, at, at])
            change.created.push({ id: group.id, name })
          }
          wantedIds.add(group.id)
          if (this.db.run('INSERT INTO group_members (group_id, user_id, added_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING', [group.id, userId, at]).changes === 1) change.joined.push(group.id)
        }
        const current = this.db
          .query<{ id: string }, [string, string]>('SELECT g.id FROM group_members m JOIN groups g ON g.id = m.group_id WHERE m.user_id = ? AND g.source = ?')
          .all(userId, source)
        for (const { id } of current) {
          if (wantedIds.has(id)) continue
          this.db.run('DELETE FROM group_members WHERE group_id = ? AND user_id = ?', [id, userId])
          change.left.push(id)
        }
        return change
      })
      .immediate()
  }
}
