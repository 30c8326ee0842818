import { useEffect, useState } from 'preact/hooks'
import { api } from '../api'
import { Card, ErrorText, Field, useAction, useId, when } from '../ui'

interface AuditEvent {
  id: string
  at: string
  actor: { id: string; email: string } | null
  ip: string | null
  action: string
  target: string | null
  details: Record<string, unknown>
  requestId: string | null
}

const PAGE = 50
const FAMILIES = ['auth.*', 'user.*', 'apikey.*', 'group.*', 'collection.*', 'document.*', 'plugin.*', 'mcp_server.*', 'backup.*']

/** The audit log (admin): newest first, filtered by action, actor and time, a page at a time. */
export function AuditPage() {
  const [action, setAction] = useState('')
  const [actor, setActor] = useState('')
  const [since, setSince] = useState('')
  const [events, setEvents] = useState<AuditEvent[]>([])
  const [next, setNext] = useState<string | null>(null)
  // The cursors of the pages before this one (the first page has none).
  const [trail, setTrail] = useState<(string | null)[]>([])
  const actionId = useId('action')
  const load = useAction(async (cursor: string | null, history: (string | null)[]) => {
    const query = new URLSearchParams({ limit: String(PAGE) })
    if (action.trim()) query.set('action', action.trim())
    if (actor.trim()) query.set('actor', actor.trim())
    if (since) query.set('since', new Date(since).toISOString())
    if (cursor) query.set('cursor', cursor)
    const page = await api<{ events: AuditEvent[]; nextCursor: string | null }>('GET', `/admin/audit?${query}`)
    setEvents(page.events)
    setNext(page.nextCursor)
    setTrail(history)
  })
  useEffect(() => void load.run(null, []), [])
  const current = trail.length ? trail[trail.length - 1]! : null
  return (
    <div>
      <h1>Audit log</h1>
      <p class="muted">Who did what, from where, newest first. Events are never changed or deleted here; they are kept for UAGENT_AUDIT_RETENTION_DAYS.</p>
      <Card>
        <form class="row" aria-label="Filter the audit log" style={{ alignItems: 'flex-end' }} onSubmit={(e) => (e.preventDefault(), void load.run(null, []))}>
          <div class="grow">
            <label for={actionId}>Action</label>
            <input id={actionId} list={`${actionId}-list`} placeholder="e.g. group.* or auth.login_failed" value={action} onInput={(e) => setAction(e.currentTarget.value)} />
            <datalist id={`${actionId}-list`}>
              {FAMILIES.map((family) => (
                <option value={family} />
              ))}
            </datalist>
          </div>
          <div class="grow">
            <Field label="Actor (email or id)" value={actor} onInput={(e) => setActor(e.currentTarget.value)} />
          </div>
          <div>
            <Field label="Since" type="datetime-local" value={since} onInput={(e) => setSince(e.currentTarget.value)} />
          </div>
          <button type="submit" class="primary" disabled={load.busy}>
            Filter
          </button>
        </form>
        <ErrorText error={load.error} />
      </Card>
      <Card title="Events">
        <div class="table-wrap">
          <table aria-label="Audit events">
            <thead>
              <tr>
                <th>When</th>
                <th>Action</th>
                <th>Actor</th>
                <th>Target</th>
                <th>Address</th>
                <th>Details</th>
              </tr>
            </thead>
            <tbody>
              {events.map((e) => (
                <tr key={e.id}>
                  <td class="small">{when(e.at)}</td>
                  <td>
                    <code>{e.action}</code>
                  </td>
                  <td>{e.actor?.email ?? <span class="muted">—</span>}</td>
                  <td class="small">{e.target ?? ''}</td>
                  <td class="small">{e.ip ?? ''}</td>
                  <td class="small" style={{ overflowWrap: 'anywhere' }}>
                    {Object.keys(e.details).length ? JSON.stringify(e.details) : ''}
                  </td>
                </tr>
              ))}
              {events.length === 0 && !load.busy && (
                <tr>
                  <td colSpan={6} class="muted">
                    No events.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
        <div class="row" style={{ marginTop: '.75rem' }}>
          <button type="button" disabled={!trail.length || load.busy} onClick={() => void load.run(trail.length > 1 ? trail[trail.length - 2]! : null, trail.slice(0, -1))}>
            Newer
          </button>
          <button type="button" disabled={!next || load.busy} onClick={() => void load.run(next, [...trail, next])}>
            Older
          </button>
          <span class="muted small">{current ? `Page ${trail.length + 1}` : 'Newest events'}</span>
        </div>
      </Card>
    </div>
  )
}
