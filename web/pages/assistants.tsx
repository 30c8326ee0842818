import { useEffect, useState } from 'preact/hooks'
import { api } from '../api'
import { type Assistant, assistantRef, canEditAssistant, canManageAssistant, pickedAssistant } from '../assistants'
import { type Collection, labelOf } from '../collections'
import { navigate } from '../router'
import { Card, ErrorText, Field, useAction, useId } from '../ui'
import { ShareDialog } from './share-dialog'

const ASSISTANT_HELP = 'Viewers use it (in chat, from /v1, MCP and agents) with their own access to its collections; editors also change it; managers also share and delete it.'

/** Assistants: presets of instructions, collections and starters that a team shares and picks in chat. */
export function AssistantsPage() {
  const [assistants, setAssistants] = useState<Assistant[]>([])
  const [editing, setEditing] = useState<Assistant | 'new' | null>(null)
  const [sharing, setSharing] = useState<Assistant | null>(null)
  const load = useAction(async () => setAssistants((await api<{ assistants: Assistant[] }>('GET', '/assistants')).assistants))
  useEffect(() => void load.run(), [])
  const own = assistants.filter((a) => !a.builtin)
  const builtin = assistants.filter((a) => a.builtin)
  return (
    <div>
      <h1>Assistants</h1>
      <p class="muted">
        An assistant is set up once — its instructions, the collections it answers from, its starters — and used by name by everyone it is shared with. It never reads more than the person using it may: its collections you cannot read are left out.
      </p>
      <div class="row">
        <button type="button" class="primary" onClick={() => setEditing('new')}>
          New assistant
        </button>
      </div>
      <ErrorText error={load.error} />
      {editing && <AssistantForm assistant={editing === 'new' ? null : editing} onDone={() => (setEditing(null), void load.run())} />}
      {sharing && (
        <ShareDialog
          collection={assistantRef(sharing)}
          label={sharing.name}
          accessPath={`/assistants/${encodeURIComponent(assistantRef(sharing))}/access`}
          help={ASSISTANT_HELP}
          shareCollections
          onClose={() => setSharing(null)}
        />
      )}
      <Card title="Your assistants and those shared with you">
        <ul class="files" aria-label="Assistants">
          {own.map((a) => (
            <li key={a.id} class="stack" style={{ gap: '.25rem' }}>
              <div class="row">
                <strong class="grow">{a.name}</strong>
                {a.access !== 'owner' && (
                  <span class="muted small">
                    shared by {a.owner.email} · {a.access}
                  </span>
                )}
                <button type="button" aria-label={`Chat with ${a.name}`} onClick={() => ((pickedAssistant.value = assistantRef(a)), navigate('/chat'))}>
                  Chat
                </button>
                {canEditAssistant(a) && (
                  <button type="button" aria-label={`Edit assistant ${a.name}`} onClick={() => setEditing(a)}>
                    Edit
                  </button>
                )}
                {canManageAssistant(a) && (
                  <button type="button" aria-label={`Share assistant ${a.name}`} onClick={() => setSharing(a)}>
                    Share
                  </button>
                )}
                {canManageAssistant(a) && <DeleteAssistant assistant={a} onDeleted={() => void load.run()} />}
              </div>
              {a.description && <span class="muted small">{a.description}</span>}
              <span class="muted small">
                {a.collections.length ? `Answers from ${a.collections.map((c) => c.name).join(', ')}` : 'No collections'}
                {a.collectionsHidden > 0 && ` (and ${a.collectionsHidden} you cannot read)`}
              </span>
            </li>
          ))}
          {own.length === 0 && !load.busy && <li class="muted">No assistants yet: make one with New assistant.</li>}
        </ul>
      </Card>
      <Card title="Built-in agents">
        <ul class="files" aria-label="Built-in agents">
          {builtin.map((a) => (
            <li key={a.id} class="row">
              <strong>{a.name}</strong>
              <span class="muted small grow">{a.description}</span>
              <span class="badge off">read-only</span>
            </li>
          ))}
        </ul>
      </Card>
    </div>
  )
}

function DeleteAssistant({ assistant, onDeleted }: { assistant: Assistant; onDeleted: () => void }) {
  const remove = useAction(async () => {
    if (!confirm(`Delete the assistant ${assistant.name}? Everyone it is shared with loses it.`)) return
    await api('DELETE', `/assistants/${encodeURIComponent(assistantRef(assistant))}`)
    onDeleted()
  })
  return (
    <>
      <button type="button" class="danger" aria-label={`Delete assistant ${assistant.name}`} disabled={remove.busy} onClick={() => void remove.run()}>
        Delete
      </button>
      <ErrorText error={remove.error} />
    </>
  )
}

/** Create or edit: name, description, instructions, collections (the caller's readable ones), temperature, starters. */
function AssistantForm({ assistant, onDone }: { assistant: Assistant | null; onDone: () => void }) {
  const [name, setName] = useState(assistant?.name ?? '')
  const [description, setDescription] = useState(assistant?.description ?? '')
  const [instructions, setInstructions] = useState(assistant?.instructions ?? '')
  const [chosen, setChosen] = useState<string[]>(assistant?.collections.map((c) => c.id) ?? [])
  const [temperature, setTemperature] = useState(assistant?.temperature === null || assistant?.temperature === undefined ? '' : String(assistant.temperature))
  const [starters, setStarters] = useState((assistant?.starters ?? []).join('\n'))
  const [collections, setCollections] = useState<Collection[]>([])
  const instructionsId = useId('instructions')
  const startersId = useId('starters')
  useEffect(() => {
    api<{ collections: Collection[] }>('GET', '/rag/collections').then(({ collections }) => setCollections(collections), () => setCollections([]))
  }, [])
  const save = useAction(async () => {
    const body = {
      name: name.trim(),
      description,
      instructions,
      collections: chosen,
      temperature: temperature.trim() === '' ? null : Number(temperature),
      starters: starters.split('\n').map((s) => s.trim()).filter(Boolean),
    }
    if (assistant) await api('PATCH', `/assistants/${encodeURIComponent(assistantRef(assistant))}`, body)
    else await api('POST', '/assistants', body)
    onDone()
  })
  const toggle = (id: string, on: boolean) => setChosen(on ? [...new Set([...chosen, id])] : chosen.filter((c) => c !== id))
  return (
    <Card title={assistant ? `Edit ${assistant.name}` : 'New assistant'}>
      <form class="stack" aria-label={assistant ? `Edit assistant ${assistant.name}` : 'Create an assistant'} onSubmit={(e) => (e.preventDefault(), void save.run())}>
        <Field label="Name" required maxLength={64} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <Field label="Description" maxLength={2000} value={description} onInput={(e) => setDescription(e.currentTarget.value)} />
        <div>
          <label for={instructionsId}>Instructions</label>
          <textarea id={instructionsId} rows={6} maxLength={20000} value={instructions} placeholder="You are the HR helper of Example Ltd. Answer from the handbook and cite it." onInput={(e) => setInstructions(e.currentTarget.value)} />
        </div>
        <fieldset>
          <legend>Collections it answers from</legend>
          {collections.map((c) => (
            <label class="row small" key={c.id}>
              <input type="checkbox" checked={chosen.includes(c.id)} onChange={(e) => toggle(c.id, e.currentTarget.checked)} /> {labelOf(c)}
            </label>
          ))}
          {collections.length === 0 && <p class="muted small">You have no collections yet.</p>}
          {assistant && assistant.collectionsHidden > 0 && <p class="muted small">It also has {assistant.collectionsHidden} collection(s) you cannot read; they stay as they are.</p>}
        </fieldset>
        <Field label="Temperature (0 to 2, empty for the model's default)" type="number" min={0} max={2} step={0.1} value={temperature} onInput={(e) => setTemperature(e.currentTarget.value)} />
        <div>
          <label for={startersId}>Conversation starters (one per line)</label>
          <textarea id={startersId} rows={3} value={starters} onInput={(e) => setStarters(e.currentTarget.value)} />
        </div>
        <div class="row">
          <button type="submit" class="primary" disabled={save.busy || !name.trim()}>
            {assistant ? 'Save changes' : 'Create assistant'}
          </button>
          <button type="button" onClick={onDone}>
            Cancel
          </button>
        </div>
        <ErrorText error={save.error} />
      </form>
    </Card>
  )
}

