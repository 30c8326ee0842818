import type { ComponentChildren } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { api, messageOf } from '../api'
import { onCopyClick, renderMarkdown } from '../markdown'
import { Card, ErrorText, useAction } from '../ui'

export interface Source {
  id: string
  title: string
  chunk: number
  score: number
  collection: string
  page?: number
  /** A file of this conversation (its title is the file's name). */
  file?: boolean
}

export interface Message {
  id?: string
  role: 'user' | 'assistant' | 'system'
  content: string
  metadata?: { model?: string; sources?: Source[]; cancelled?: boolean; error?: string; assistant?: { id: string; name: string } }
}

export interface Conversation {
  id: string
  title: string
  updatedAt: string
  messages: Message[]
  access?: 'owner' | 'viewer'
  owner?: { id: string; email: string }
  assistant?: { id: string; name: string }
}

export function MessageView({ message, onCite, children }: { message: Message; onCite: (source: Source) => void; children?: ComponentChildren }) {
  if (message.role === 'user') return <div class="msg user">{message.content}</div>
  const sources = message.metadata?.sources ?? []
  const onClick = (event: MouseEvent) => {
    if (onCopyClick(event)) return
    const cite = (event.target as Element).closest?.('button[data-cite]') as HTMLElement | null
    const source = cite && sources[Number(cite.dataset.cite) - 1]
    if (source) onCite(source)
  }
  return (
    <div class="msg assistant" aria-label="Assistant reply">
      <div class="md" onClick={onClick} dangerouslySetInnerHTML={{ __html: renderMarkdown(message.content || '…', sources.length) }} />
      <div class="meta">
        {message.metadata?.assistant && <span class="badge">{message.metadata.assistant.name}</span>}{' '}
        {message.metadata?.model && <span>Answered by {message.metadata.model}</span>}
        {message.metadata?.cancelled && <span> · stopped</span>}
        {message.metadata?.error && <span class="error"> · {message.metadata.error}</span>}
        {sources.length > 0 && <span> · {sources.length} source{sources.length === 1 ? '' : 's'}</span>}
      </div>
      {children}
    </div>
  )
}

interface Passage {
  id: string
  content: string
  score: number
  metadata: Record<string, unknown>
}

/** The cited passage (found again by searching its collection for the question) and its whole document. */
export function SourcePanel({ source, question, onClose }: { source: Source; question: string; onClose: () => void }) {
  const [passage, setPassage] = useState<string | null>(null)
  const [doc, setDoc] = useState<{ title: string; text: string } | null>(null)
  const [error, setError] = useState<unknown>(null)
  useEffect(() => {
    setPassage(null)
    setDoc(null)
    setError(null)
    const name = encodeURIComponent(source.collection)
    api<{ results: Passage[] }>('POST', '/rag/search', { query: question.slice(0, 1000) || source.title, collection: source.collection, limit: 50 })
      .then(({ results }) => {
        const hit = results.find((r) => r.id === source.id && r.metadata.chunk === source.chunk) ?? results.find((r) => r.id === source.id)
        setPassage(hit?.content ?? '')
      })
      .catch(setError)
    api<{ title: string; text: string }>('GET', `/rag/collections/${name}/documents/${encodeURIComponent(source.id)}`).then(setDoc).catch(setError)
  }, [source, question])
  return (
    <Card
      title={`Source: ${source.title}`}
      actions={
        <button type="button" onClick={onClose} aria-label="Close source">
          Close
        </button>
      }
    >
      <p class="muted">
        {source.file ? 'A file of this conversation' : `Collection ${source.collection}`} · passage {source.chunk + 1}
        {source.page ? ` · page ${source.page}` : ''} · score {source.score.toFixed(3)}
      </p>
      {passage === null ? <p class="muted">Loading the passage…</p> : passage ? <div class="passage" aria-label="Cited passage">{passage}</div> : null}
      <ErrorText error={error} />
      {doc && (
        <details>
          <summary>Whole document: {doc.title}</summary>
          <div class="doctext">{doc.text}</div>
        </details>
      )}
    </Card>
  )
}

export function ConversationItem({ conversation, current, onOpen, onChanged }: { conversation: Conversation; current: boolean; onOpen: () => void; onChanged: (deleted: boolean) => void }) {
  const [editing, setEditing] = useState(false)
  const [title, setTitle] = useState(conversation.title)
  const action = useAction(async (kind: 'rename' | 'delete') => {
    if (kind === 'rename') {
      await api('PATCH', `/conversations/${conversation.id}`, { title })
      setEditing(false)
      onChanged(false)
    } else {
      await api('DELETE', `/conversations/${conversation.id}`)
      onChanged(true)
    }
  })
  if (editing)
    return (
      <li>
        <form
          class="row"
          onSubmit={(event) => {
            event.preventDefault()
            void action.run('rename')
          }}
        >
          <input aria-label="New title" class="grow" value={title} maxLength={200} onInput={(e) => setTitle(e.currentTarget.value)} autoFocus />
          <button type="submit">Save</button>
          <button type="button" onClick={() => setEditing(false)}>
            Cancel
          </button>
          <ErrorText error={action.error} />
        </form>
      </li>
    )
  if (conversation.access === 'viewer')
    return (
      <li aria-current={current ? 'true' : undefined}>
        <a href={`/app/c/${conversation.id}`} onClick={(event) => (event.preventDefault(), onOpen())} title={`${conversation.title} (shared by ${conversation.owner?.email})`}>
          {conversation.title} <span class="muted small">· {conversation.owner?.email}</span>
        </a>
      </li>
    )
  return (
    <li aria-current={current ? 'true' : undefined}>
      <a href={`/app/chat/${conversation.id}`} onClick={(event) => (event.preventDefault(), onOpen())} title={conversation.title}>
        {conversation.title}
      </a>
      <button type="button" aria-label={`Rename ${conversation.title}`} onClick={() => setEditing(true)}>
        ✎
      </button>
      <button type="button" aria-label={`Delete ${conversation.title}`} onClick={() => confirm(`Delete "${conversation.title}"?`) && void action.run('delete')}>
        ✕
      </button>
      {action.error ? <span class="error">{messageOf(action.error)}</span> : null}
    </li>
  )
}
