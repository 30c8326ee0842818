import { useEffect, useState } from 'preact/hooks'
import { api, currentUser, download, isAdmin, request } from '../api'
import { bytes, Card, ErrorText, Field, useAction, useId, when } from '../ui'

interface Account {
  id: string
  email: string
  roles: string[]
  mfaEnabled: boolean
  createdAt: string
  disabled: boolean
}
interface Key {
  id: string
  name: string
  prefix: string
  createdAt: string
  lastUsedAt: string | null
  expiresAt: string | null
}

export function AdminPage() {
  return (
    <div>
      <h1>Administration</h1>
      {isAdmin() && <Users />}
      <div class="grid2">
        <ApiKeys />
        {isAdmin() && <Backups />}
      </div>
    </div>
  )
}

function Users() {
  const [users, setUsers] = useState<Account[]>([])
  const [message, setMessage] = useState<string | null>(null)
  const load = useAction(async () => setUsers((await api<{ users: Account[] }>('GET', '/auth/users?limit=100')).users))
  useEffect(() => void load.run(), [])
  const act = useAction(async (user: Account, what: 'disable' | 'enable' | 'unlock' | 'delete' | 'password') => {
    setMessage(null)
    let result: { message: string }
    if (what === 'delete') {
      if (!confirm(`Delete ${user.email} and everything they own?`)) return
      result = await api('DELETE', `/auth/users/${user.id}`)
    } else if (what === 'password') {
      const newPassword = prompt(`New password for ${user.email} (at least 8 characters)`)
      if (!newPassword) return
      result = await api('POST', `/auth/users/${user.id}/password`, { newPassword })
    } else result = await api('POST', `/auth/users/${user.id}/${what}`)
    setMessage(`${user.email}: ${result.message}`)
    await load.run()
  })
  return (
    <Card title="Users">
      <CreateUser onCreated={() => void load.run()} />
      <ErrorText error={load.error ?? act.error} />
      {message && <p class="ok" role="status">{message}</p>}
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th>Email</th>
              <th>Roles</th>
              <th>State</th>
              <th>Created</th>
              <th>Actions</th>
            </tr>
          </thead>
          <tbody>
            {users.map((u) => (
              <tr key={u.id}>
                <td>{u.email}</td>
                <td>{u.roles.join(', ')}</td>
                <td>
                  {u.disabled ? <span class="badge bad">disabled</span> : <span class="badge">active</span>} {u.mfaEnabled && <span class="badge off">MFA</span>}
                </td>
                <td>{when(u.createdAt)}</td>
                <td>
                  <div class="row">
                    {u.disabled ? (
                      <button type="button" onClick={() => void act.run(u, 'enable')} aria-label={`Enable ${u.email}`}>
                        Enable
                      </button>
                    ) : (
                      <button type="button" onClick={() => void act.run(u, 'disable')} aria-label={`Disable ${u.email}`} disabled={u.id === currentUser.value?.id}>
                        Disable
                      </button>
                    )}
                    <button type="button" onClick={() => void act.run(u, 'password')} aria-label={`Reset password of ${u.email}`}>
                      Reset password
                    </button>
                    <button type="button" onClick={() => void act.run(u, 'unlock')} aria-label={`Unlock ${u.email}`}>
                      Unlock
                    </button>
                    <button type="button" class="danger" onClick={() => void act.run(u, 'delete')} aria-label={`Delete ${u.email}`} disabled={u.id === currentUser.value?.id}>
                      Delete
                    </button>
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </Card>
  )
}

function CreateUser({ onCreated }: { onCreated: () => void }) {
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [admin, setAdmin] = useState(false)
  const [done, setDone] = useState<string | null>(null)
  const create = useAction(async () => {
    setDone(null)
    const { user } = await api<{ user: Account }>('POST', '/auth/users', { email, password, roles: admin ? ['admin', 'user'] : ['user'] })
    setDone(`Created ${user.email}`)
    setEmail('')
    setPassword('')
    onCreated()
  })
  return (
    <form class="row" aria-label="Create a user" style={{ alignItems: 'flex-end', marginBottom: '1rem' }} onSubmit={(e) => (e.preventDefault(), void create.run())}>
      <div class="grow">
        <Field label="New user's email" type="email" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
      </div>
      <div class="grow">
        <Field label="Password" type="password" autocomplete="new-password" required minLength={8} value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
      </div>
      <label class="check">
        <input type="checkbox" checked={admin} onChange={(e) => setAdmin(e.currentTarget.checked)} /> Admin
      </label>
      <button type="submit" class="primary" disabled={create.busy}>
        Create user
      </button>
      <div style={{ flexBasis: '100%' }}>
        <ErrorText error={create.error} />
        {done && <p class="ok" role="status">{done}</p>}
      </div>
    </form>
  )
}

function ApiKeys() {
  const [keys, setKeys] = useState<Key[]>([])
  const [name, setName] = useState('')
  const [expires, setExpires] = useState('')
  const [secret, setSecret] = useState<string | null>(null)
  const expiresId = useId('expires')
  const load = useAction(async () => setKeys((await api<{ keys: Key[] }>('GET', '/auth/api-keys')).keys))
  useEffect(() => void load.run(), [])
  const create = useAction(async () => {
    const made = await api<{ key: string }>('POST', '/auth/api-keys', { name, ...(expires ? { expiresIn: expires } : {}) })
    setSecret(made.key)
    setName('')
    await load.run()
  })
  const revoke = useAction(async (id: string) => {
    await api('DELETE', `/auth/api-keys/${id}`)
    await load.run()
  })
  return (
    <Card title="Your API keys">
      <form class="row" style={{ alignItems: 'flex-end' }} onSubmit={(e) => (e.preventDefault(), void create.run())}>
        <div class="grow">
          <Field label="Key name" required maxLength={100} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </div>
        <div>
          <label for={expiresId}>Expires</label>
          <select id={expiresId} value={expires} onChange={(e) => setExpires(e.currentTarget.value)}>
            <option value="">Never</option>
            <option value="7d">In 7 days</option>
            <option value="30d">In 30 days</option>
            <option value="365d">In a year</option>
          </select>
        </div>
        <button type="submit" class="primary" disabled={create.busy}>
          Create key
        </button>
      </form>
      <ErrorText error={create.error ?? load.error ?? revoke.error} />
      {secret && (
        <div class="stack" role="status" style={{ marginTop: '.75rem' }}>
          <p>Copy this key now: it is shown only once.</p>
          <div class="secret">{secret}</div>
          <div class="row">
            <button type="button" onClick={() => void navigator.clipboard.writeText(secret)}>
              Copy
            </button>
            <button type="button" onClick={() => setSecret(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      <ul class="files" aria-label="API keys">
        {keys.map((k) => (
          <li class="row">
            <span class="grow">
              <strong>{k.name}</strong> <span class="muted small">{k.prefix}… · created {when(k.createdAt)} · last used {when(k.lastUsedAt)} · expires {k.expiresAt ? when(k.expiresAt) : 'never'}</span>
            </span>
            <button type="button" class="danger" aria-label={`Revoke key ${k.name}`} onClick={() => void revoke.run(k.id)}>
              Revoke
            </button>
          </li>
        ))}
        {keys.length === 0 && <li class="muted">No keys.</li>}
      </ul>
    </Card>
  )
}

function Backups() {
  const [list, setList] = useState<{ name: string; size: number; createdAt: string }[]>([])
  const load = useAction(async () => setList((await api<{ backups: typeof list }>('GET', '/admin/backups')).backups))
  useEffect(() => void load.run(), [])
  const make = useAction(async () => {
    const response = await request('/admin/backup', { method: 'POST' })
    const name = /filename="?([^";]+)/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? 'uagent-backup.tar.gz'
    download(await response.blob(), name)
    await load.run()
  })
  return (
    <Card title="Backups">
      <p class="muted">A backup is a consistent copy of the whole data folder, downloaded as a .tar.gz.</p>
      <button type="button" class="primary" onClick={() => void make.run()} disabled={make.busy}>
        {make.busy ? 'Making the backup…' : 'Download a backup now'}
      </button>
      <ErrorText error={make.error ?? load.error} />
      <h3 style={{ marginTop: '1rem' }}>Scheduled backups on the server</h3>
      <ul class="files">
        {list.map((b) => (
          <li class="small">
            {b.name} · {bytes(b.size)} · {when(b.createdAt)}
          </li>
        ))}
        {list.length === 0 && <li class="muted">None yet.</li>}
      </ul>
    </Card>
  )
}
