import { useEffect, useState } from 'preact/hooks'
import { api } from '../api'
import { Card, ErrorText, useAction, useId } from '../ui'

type Role = 'viewer' | 'editor' | 'manager'
interface Share {
  type: 'user' | 'group' | 'everyone'
  id?: string
  email?: string
  name?: string
  role: Role
}
interface Access {
  owner: { id: string; email: string }
  shares: Share[]
}
/** An entry being edited: one already there (with its id), or one added here (by email or group name). */
interface Entry {
  type: Share['type']
  id?: string
  who: string
  role: Role
}

const ROLES: Role[] = ['viewer', 'editor', 'manager']
const ROLE_HELP = 'Viewers search, ask and ground chat in it; editors also add and delete documents; managers also share and delete it.'

const entryOf = (share: Share): Entry => ({ type: share.type, id: share.id, who: share.type === 'everyone' ? 'everyone' : (share.email ?? share.name ?? ''), role: share.role })

/** An entry as PUT …/access takes it: by id when known, else by the email or group name typed. */
function asInput(entry: Entry) {
  if (entry.type === 'everyone') return { type: entry.type, role: entry.role }
  if (entry.type === 'user') return entry.id ? { type: entry.type, userId: entry.id, role: entry.role } : { type: entry.type, email: entry.who.trim(), role: entry.role }
  return entry.id ? { type: entry.type, groupId: entry.id, role: entry.role } : { type: entry.type, name: entry.who.trim(), role: entry.role }
}

/**
 * Who may use a collection: users (by email), groups and everyone, each with a role. Shown to its
 * owner, its managers and admins; saving replaces the whole list (PUT /rag/collections/{ref}/access).
 */
export function ShareDialog({
  collection,
  label,
  onClose,
  accessPath,
  help = ROLE_HELP,
  shareCollections = false,
  roles = ROLES,
}: {
  collection: string
  label: string
  onClose: () => void
  /** Another kind's access list (an assistant's, a conversation's): the same dialog, the same rules. */
  accessPath?: string
  help?: string
  /** Offer "also share its collections" (assistants: PUT … {shareCollections: true}). */
  shareCollections?: boolean
  /** The roles this kind takes (a conversation: viewer only). */
  roles?: Role[]
}) {
  const [withCollections, setWithCollections] = useState(false)
  const [sharedToo, setSharedToo] = useState<string[]>([])
  const [access, setAccess] = useState<Access | null>(null)
  const [entries, setEntries] = useState<Entry[]>([])
  const [groups, setGroups] = useState<string[]>([])
  const [type, setType] = useState<Share['type']>('group')
  const [who, setWho] = useState('')
  const [role, setRole] = useState<Role>(roles[0]!)
  const [saved, setSaved] = useState(false)
  const groupsId = useId('groups')
  const typeId = useId('share-type')
  const whoId = useId('share-who')
  const roleId = useId('share-role')
  const path = accessPath ?? `/rag/collections/${encodeURIComponent(collection)}/access`
  const load = useAction(async () => {
    const found = await api<Access>('GET', path)
    setAccess(found)
    setEntries(found.shares.map(entryOf))
  })
  const save = useAction(async () => {
    const found = await api<Access & { collectionsShared?: string[] }>('PUT', path, { shares: entries.map(asInput), ...(withCollections ? { shareCollections: true } : {}) })
    setSharedToo(found.collectionsShared ?? [])
    setAccess(found)
    setEntries(found.shares.map(entryOf))
    setSaved(true)
  })
  useEffect(() => {
    void load.run()
    // The groups the caller may pick from (an admin: all; a user: those they are in); typing a name works too.
    api<{ groups: { name: string }[] }>('GET', '/groups').then(({ groups }) => setGroups(groups.map((g) => g.name)), () => setGroups([]))
  }, [collection])
  const change = (list: Entry[]) => (setEntries(list), setSaved(false))
  const add = () => {
    if (type !== 'everyone' && !who.trim()) return
    const key = type === 'everyone' ? 'everyone' : who.trim().toLowerCase()
    change([...entries.filter((e) => !(e.type === type && e.who.toLowerCase() === key)), { type, who: type === 'everyone' ? 'everyone' : who.trim(), role }])
    setWho('')
  }
  return (
    <div role="dialog" aria-modal="false" aria-label={`Share ${label}`} class="share-dialog">
      <Card
        title={`Share ${label}`}
        actions={
          <button type="button" onClick={onClose} aria-label="Close sharing">
            Close
          </button>
        }
      >
        <ErrorText error={load.error} />
        {access && (
          <p class="muted small">
            Owner: {access.owner.email}. {help}
          </p>
        )}
        <ul class="files" aria-label="People with access">
          {entries.map((entry, i) => (
            <li class="row" key={`${entry.type}:${entry.who}`}>
              <span class="grow">
                <span class="badge">{entry.type}</span> {entry.who}
              </span>
              <select aria-label={`Role of ${entry.who}`} value={entry.role} onChange={(e) => change(entries.map((x, j) => (j === i ? { ...x, role: e.currentTarget.value as Role } : x)))}>
                {roles.map((r) => (
                  <option value={r}>{r}</option>
                ))}
              </select>
              <button type="button" class="danger" aria-label={`Remove ${entry.who}`} onClick={() => change(entries.filter((_, j) => j !== i))}>
                Remove
              </button>
            </li>
          ))}
          {access && entries.length === 0 && <li class="muted">Only the owner{access ? ` (${access.owner.email})` : ''} and admins.</li>}
        </ul>
        <form class="row" onSubmit={(e) => (e.preventDefault(), add())}>
          <div>
            <label for={typeId}>Share with</label>
            <select id={typeId} value={type} onChange={(e) => setType(e.currentTarget.value as Share['type'])}>
              <option value="group">a group</option>
              <option value="user">a user</option>
              <option value="everyone">everyone</option>
            </select>
          </div>
          {type !== 'everyone' && (
            <div class="grow">
              <label for={whoId}>{type === 'user' ? 'Email' : 'Group'}</label>
              <input
                id={whoId}
                value={who}
                type={type === 'user' ? 'email' : 'text'}
                list={type === 'group' ? groupsId : undefined}
                placeholder={type === 'user' ? 'name@example.com' : 'e.g. staff'}
                onInput={(e) => setWho(e.currentTarget.value)}
              />
              <datalist id={groupsId}>
                {groups.map((g) => (
                  <option value={g} />
                ))}
              </datalist>
            </div>
          )}
          <div>
            <label for={roleId}>Role</label>
            <select id={roleId} value={role} onChange={(e) => setRole(e.currentTarget.value as Role)}>
              {roles.map((r) => (
                <option value={r}>{r}</option>
              ))}
            </select>
          </div>
          <button type="submit">Add</button>
        </form>
        {shareCollections && (
          <label class="row small">
            <input type="checkbox" checked={withCollections} onChange={(e) => setWithCollections(e.currentTarget.checked)} />
            Also give them viewer on its collections that you manage
          </label>
        )}
        <div class="row">
          <button type="button" class="primary" disabled={save.busy || !access} onClick={() => void save.run()}>
            Save access
          </button>
          {saved && <span class="ok small">Saved: it counts from each person's next request.</span>}
          {saved && sharedToo.length > 0 && <span class="ok small">Collections shared too: {sharedToo.join(', ')}</span>}
        </div>
        <ErrorText error={save.error} />
      </Card>
    </div>
  )
}
