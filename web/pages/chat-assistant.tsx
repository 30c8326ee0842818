import { type Assistant, assistantLabel, assistantRef } from '../assistants'
import { useId } from '../ui'

/**
 * The assistant picker of the chat composer. A conversation keeps the assistant it started with:
 * then the picker shows it and cannot change it (a new chat can).
 */
export function AssistantPicker({ assistants, value, kept, onChange }: { assistants: Assistant[]; value: string; kept: { id: string; name: string } | null; onChange: (ref: string) => void }) {
  const id = useId('assistant')
  if (kept) {
    return (
      <div>
        <span class="muted small" id={id}>
          Assistant
        </span>
        <div aria-labelledby={id}>
          <span class="badge">{kept.name}</span>
        </div>
      </div>
    )
  }
  return (
    <div>
      <label for={id}>Assistant</label>
      <select id={id} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">None</option>
        {assistants.map((a) => (
          <option value={assistantRef(a)}>{assistantLabel(a)}</option>
        ))}
      </select>
    </div>
  )
}

/** A new chat with an assistant: its description and its starters, each a button that sends it. */
export function AssistantStarters({ assistant, onStart }: { assistant: Assistant; onStart: (text: string) => void }) {
  return (
    <div class="stack" aria-label={`Starters of ${assistant.name}`} role="group">
      <h2>{assistant.name}</h2>
      {assistant.description && <p>{assistant.description}</p>}
      {assistant.collectionsHidden > 0 && <p class="muted small">{assistant.collectionsHidden} of its collections are not shared with you: it answers without them.</p>}
      <div class="row">
        {assistant.starters.map((starter) => (
          <button type="button" onClick={() => onStart(starter)}>
            {starter}
          </button>
        ))}
      </div>
    </div>
  )
}
