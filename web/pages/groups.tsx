import { useEffect, useState } from 'preact/hooks'
import { api, isAdmin } from '../api'
import { Card, ErrorText, Field, useAction, when } from '../ui'

interface Group {
  id: string
  name: string
  description: string
  source: 'local' | 'oidc' | 'ldap'
  members: number
  createdAt: string
}
interface Member {
  id: string
  email: string
  addedAt: string
}
interface GroupDetail extends Omit<Group, 'members'> {
  members: Member[]
}

/** Groups: admins create, rename and delete them and choose members; others see the groups they are in. */
export function GroupsPage() {
  const admin = isAdmin()
  const [groups, setGroups] = useState<Group[]>([])
  const [open, setOpen] = useState<string | null>(null)
  const load = useAction(async () => setGroups((await api<{ groups: Group[] }>('GET', '/groups')).groups))
  useEffect(() => void load.run(), [])
  return (
    <div>
      <h1>Groups</h1>
      <p class="muted">
        {admin
          ? 'Collections are shared with groups: a member gets what the group was given, and loses it at their next request once removed.'
          : 'The groups you are in. Collections shared with a group are yours to use while you are in it.'}
      </p>
      {admin && <CreateGroup onCreated={(id) => (void load.run(), setOpen(id))} />}
      <ErrorText error={load.error} />
      <Card title={admin ? 'All groups' : 'Your groups'}>
        <ul class="files" aria-label="Groups">
          {groups.map((g) => (
            <li key={g.id} class="stack" style={{ gap: '.25rem' }}>
              <div class="row">
                <button type="button" class="link grow" style={{ textAlign: 'left' }} aria-expanded={open === g.id} onClick={() => setOpen(open === g.id ? null : g.id)}>
                  <strong>{g.name}</strong>
                </button>
                <span class="muted small">
                  {g.members} member{g.members === 1 ? '' : 's'}
                </span>
                {g.source !== 'local' && <span class="badge off">{g.source}</span>}
              </div>
              {g.description && <span class="muted small">{g.description}</span>}
              {open === g.id && <GroupPanel id={g.id} admin={admin} onChanged={() => void load.run()} onDeleted={() => (setOpen(null), void load.run())} />}
            </li>
          ))}
          {groups.length === 0 && !load.busy && <li class="muted">{admin ? 'No groups yet.' : 'You are in no group.'}</li>}
        </ul>
      </Card>
    </div>
  )
}

function CreateGroup({ onCreated }: { onCreated: (id: string) => void }) {
  const [name, setName] = useState('')
  const [description, setDescription] = useState('')
  const create = useAction(async () => {
    const group = await api<Group>('POST', '/groups', { name, ...(description ? { description } : {}) })
    setName('')
    setDescription('')
    onCreated(group.id)
  })
  return (
    <Card title="New group">
      <form class="row" aria-label="Create a group" style={{ alignItems: 'flex-end' }} onSubmit={(e) => (e.preventDefault(), void create.run())}>
        <div class="grow">
          <Field label="Group name" required maxLength={64} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </div>
        <div class="grow">
          <Field label="Description" maxLength={500} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        </div>
        <button type="submit" class="primary" disabled={create.busy}>
          Create group
        </button>
      </form>
      <ErrorText error={create.error} />
    </Card>
  )
}

function GroupPanel({ id, admin, onChanged, onDeleted }: { id: string; admin: boolean; onChanged: () => void; onDeleted: () => void }) {
  const [group, setGroup] = useState<GroupDetail | null>(null)
  const [email, setEmail] = useState('')
  const [newName, setNewName] = useState('')
  const load = useAction(async () => {
    const detail = await api<GroupDetail>('GET', `/groups/${id}`)
    setGroup(detail)
    setNewName(detail.name)
  })
  useEffect(() => void load.run(), [id])
  const change = useAction(async (method: string, path: string, body?: unknown) => {
    const detail = await api<GroupDetail>(method, path, body)
    if ('members' in detail && Array.isArray(detail.members)) setGroup(detail)
    else await load.run()
    onChanged()
  })
  const remove = useAction(async () => {
    if (!group || !confirm(`Delete the group ${group.name}? Its members lose what was shared with it.`)) return
    await api('DELETE', `/groups/${id}`)
    onDeleted()
  })
  if (!group) return <ErrorText error={load.error} />
  return (
    <div class="stack" style={{ paddingLeft: '.75rem', borderLeft: '3px solid var(--line)' }}>
      <ul class="files" aria-label={`Members of ${group.name}`}>
        {group.members.map((m) => (
          <li key={m.id} class="row">
            <span class="grow">
              {m.email} <span class="muted small">since {when(m.addedAt)}</span>
            </span>
            {admin && (
              <button type="button" class="danger" aria-label={`Remove ${m.email} from ${group.name}`} onClick={() => void change.run('DELETE', `/groups/${id}/members/${m.id}`)}>
                Remove
              </button>
            )}
          </li>
        ))}
        {group.members.length === 0 && <li class="muted">No members.</li>}
      </ul>
      {admin && (
        <>
          <form class="row" aria-label={`Add a member to ${group.name}`} style={{ alignItems: 'flex-end' }} onSubmit={(e) => (e.preventDefault(), void change.run('POST', `/groups/${id}/members`, { email }).then((ok) => ok && setEmail('')))}>
            <div class="grow">
              <Field label="Member's email" type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
            </div>
            <button type="submit" disabled={change.busy}>
              Add member
            </button>
          </form>
          <form class="row" aria-label={`Rename ${group.name}`} style={{ alignItems: 'flex-end' }} onSubmit={(e) => (e.preventDefault(), void change.run('PATCH', `/groups/${id}`, { name: newName }))}>
            <div class="grow">
              <Field label="Name" required maxLength={64} value={newName} onInput={(e) => setNewName(e.currentTarget.value)} />
            </div>
            <button type="submit" disabled={change.busy || newName === group.name}>
              Rename
            </button>
            <button type="button" class="danger" onClick={() => void remove.run()} disabled={remove.busy}>
              Delete group
            </button>
          </form>
        </>
      )}
      <ErrorText error={change.error ?? remove.error ?? load.error} />
    </div>
  )
}
