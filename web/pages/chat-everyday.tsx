import { useEffect, useRef, useState } from 'preact/hooks'
import { api, bearer, download, messageOf, refresh, request } from '../api'
import { ErrorText, useAction } from '../ui'
import type { Message } from './chat-parts'

/** A file of a conversation, as GET /conversations/{id}/files lists it (plus the upload's own progress). */
export interface ChatFile {
  id: string
  name: string
  status: 'uploading' | 'queued' | 'running' | 'ready' | 'failed'
  reason?: string
  pages?: number
  pagesDone?: number
  /** Upload progress, 0..1, while the bytes are being sent. */
  sent?: number
}

export type Rating = 'up' | 'down'

/** Sends files to a conversation with XHR (for the upload's progress); answers the files as the server reports them. */
function sendFiles(conversationId: string, files: File[], onProgress: (sent: number) => void): Promise<{ files: ChatFile[]; jobId?: string }> {
  const send = (): Promise<{ status: number; body: any }> =>
    new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest()
      xhr.open('POST', `/conversations/${encodeURIComponent(conversationId)}/files`)
      xhr.setRequestHeader('authorization', `Bearer ${bearer()}`)
      xhr.responseType = 'json'
      xhr.upload.onprogress = (event) => event.lengthComputable && onProgress(event.loaded / event.total)
      xhr.onload = () => resolve({ status: xhr.status, body: xhr.response })
      xhr.onerror = () => reject(new Error('The upload failed: the server could not be reached'))
      const form = new FormData()
      for (const file of files) form.append('files', file, file.name)
      xhr.send(form)
    })
  return send().then(async (result) => {
    if (result.status === 401 && ['TOKEN_EXPIRED', 'UNAUTHORIZED'].includes(result.body?.code) && (await refresh())) result = await send()
    if (result.status !== 200 && result.status !== 202) throw new Error(result.body?.message ?? `Upload failed (${result.status})`)
    return result.body
  })
}

/**
 * The files of the open conversation: listed when it opens, polled while some are still being
 * read, and `attach` for new ones (a conversation is made first when there is none yet).
 */
export function useConversationFiles(conversationId: string | null, ensureConversation: () => Promise<string>) {
  const [files, setFiles] = useState<ChatFile[]>([])
  const [error, setError] = useState<unknown>(null)
  const current = useRef(conversationId)
  current.current = conversationId
  const load = (id: string) =>
    api<{ files: ChatFile[] }>('GET', `/conversations/${id}/files`)
      .then(({ files }) => current.current === id && setFiles((shown) => [...files, ...shown.filter((f) => f.status === 'uploading')]))
      .catch(setError)
  const previous = useRef(conversationId)
  useEffect(() => {
    // A new chat that became a conversation for its first files keeps their chips (still uploading).
    const madeForFiles = previous.current === null
    previous.current = conversationId
    setFiles((shown) => (madeForFiles ? shown.filter((f) => f.status === 'uploading') : []))
    setError(null)
    if (conversationId) void load(conversationId)
  }, [conversationId])
  // While a file is being read by a job, its state is asked for again.
  const pending = files.some((f) => f.status === 'queued' || f.status === 'running')
  useEffect(() => {
    if (!pending || !conversationId) return
    const timer = setInterval(() => void load(conversationId), 700)
    return () => clearInterval(timer)
  }, [pending, conversationId])

  const attach = async (chosen: File[]) => {
    if (!chosen.length) return
    setError(null)
    const placeholders: ChatFile[] = chosen.map((file) => ({ id: `uploading:${file.name}`, name: file.name, status: 'uploading', sent: 0 }))
    setFiles((shown) => [...shown.filter((f) => !chosen.some((c) => c.name === f.name)), ...placeholders])
    try {
      const id = await ensureConversation()
      const result = await sendFiles(id, chosen, (sent) => setFiles((shown) => shown.map((f) => (f.status === 'uploading' && chosen.some((c) => c.name === f.name) ? { ...f, sent } : f))))
      setFiles((shown) => [...shown.filter((f) => !(f.status === 'uploading' && chosen.some((c) => c.name === f.name))), ...result.files.filter((f) => !shown.some((s) => s.id === f.id && s.status !== 'uploading'))])
      await load(id)
    } catch (failure) {
      setFiles((shown) => shown.filter((f) => !(f.status === 'uploading' && chosen.some((c) => c.name === f.name))))
      setError(failure)
    }
  }
  const remove = async (file: ChatFile) => {
    if (!conversationId) return
    try {
      await api('DELETE', `/conversations/${conversationId}/files/${encodeURIComponent(file.id)}`)
      setFiles((shown) => shown.filter((f) => f.id !== file.id))
    } catch (failure) {
      setError(failure)
    }
  }
  return { files, error, attach, remove }
}

const STATUS: Record<ChatFile['status'], string> = { uploading: 'uploading', queued: 'waiting', running: 'reading', ready: 'ready', failed: 'failed' }

/** A chip per file: its name, its state and (while it is sent or read) a progress bar. */
export function FileChips({ files, onRemove, readOnly }: { files: ChatFile[]; onRemove: (file: ChatFile) => void; readOnly: boolean }) {
  if (!files.length) return null
  return (
    <ul class="chips" aria-label="Files of this conversation">
      {files.map((file) => {
        const progress = file.status === 'uploading' ? Math.round((file.sent ?? 0) * 100) : file.status === 'running' && file.pages ? Math.round(((file.pagesDone ?? 0) / file.pages) * 100) : null
        return (
          <li class={`chip ${file.status}`} key={file.id} title={file.reason ?? file.name}>
            <span class="chip-name">{file.name}</span>
            <span class="chip-state">{STATUS[file.status]}{file.reason ? `: ${file.reason}` : ''}</span>
            {(file.status === 'uploading' || file.status === 'running' || file.status === 'queued') && (
              <progress aria-label={`${file.name} progress`} max={100} value={progress ?? undefined} />
            )}
            {!readOnly && file.status !== 'uploading' && (
              <button type="button" aria-label={`Remove ${file.name}`} onClick={() => onRemove(file)}>
                ✕
              </button>
            )}
          </li>
        )
      })}
    </ul>
  )
}

/** The paperclip: picks files to attach. */
export function AttachButton({ onFiles, disabled }: { onFiles: (files: File[]) => void; disabled?: boolean }) {
  const input = useRef<HTMLInputElement>(null)
  return (
    <>
      <input
        ref={input}
        type="file"
        multiple
        class="skip"
        aria-label="Files to attach"
        tabIndex={-1}
        onChange={(e) => {
          onFiles([...(e.currentTarget.files ?? [])])
          e.currentTarget.value = ''
        }}
      />
      <button type="button" class="clip" aria-label="Attach files" title="Attach files (or drop them on the chat)" disabled={disabled} onClick={() => input.current?.click()}>
        📎
      </button>
    </>
  )
}

/** Thumbs up and down under a reply (pressed: the caller's rating), and regenerate on the last reply. */
export function ReplyActions({ message, rating, onRate, onRegenerate }: { message: Message & { id?: string }; rating?: Rating; onRate?: (rating: Rating) => void; onRegenerate?: () => void }) {
  if (!message.id) return null
  return (
    <div class="reply-actions">
      {onRate && (
        <>
          <button type="button" aria-label="Good reply" aria-pressed={rating === 'up'} onClick={() => onRate('up')}>
            👍
          </button>
          <button type="button" aria-label="Poor reply" aria-pressed={rating === 'down'} onClick={() => onRate('down')}>
            👎
          </button>
        </>
      )}
      {onRegenerate && (
        <button type="button" onClick={onRegenerate}>
          ↻ Regenerate
        </button>
      )}
    </div>
  )
}

/** One's own message with an Edit button; editing shows a box whose Save sends the new text. */
export function EditableMessage({ message, onSave, disabled }: { message: Message; onSave: (content: string) => void; disabled: boolean }) {
  const [editing, setEditing] = useState(false)
  const [text, setText] = useState(message.content)
  if (!editing)
    return (
      <div class="msg-wrap user">
        <div class="msg user">{message.content}</div>
        <button type="button" class="link small" disabled={disabled} aria-label="Edit message" onClick={() => (setText(message.content), setEditing(true))}>
          ✎ Edit
        </button>
      </div>
    )
  return (
    <form
      class="msg-wrap user edit"
      onSubmit={(event) => {
        event.preventDefault()
        if (!text.trim()) return
        setEditing(false)
        onSave(text.trim())
      }}
    >
      <textarea aria-label="Edited message" rows={3} maxLength={32000} value={text} onInput={(e) => setText(e.currentTarget.value)} />
      <div class="row">
        <button type="submit" class="primary" disabled={!text.trim()}>
          Save and answer again
        </button>
        <button type="button" onClick={() => setEditing(false)}>
          Cancel
        </button>
      </div>
    </form>
  )
}

/** Downloads the conversation as Markdown or JSON (the server names the file). */
export function ExportButtons({ conversationId }: { conversationId: string }) {
  const save = useAction(async (format: 'markdown' | 'json') => {
    const response = await request(`/conversations/${conversationId}/export?format=${format}`)
    const name = /filename="([^"]+)"/.exec(response.headers.get('content-disposition') ?? '')?.[1] ?? `conversation.${format === 'json' ? 'json' : 'md'}`
    download(await response.blob(), name)
  })
  return (
    <span class="row">
      <button type="button" onClick={() => void save.run('markdown')}>
        ⤓ Markdown
      </button>
      <button type="button" onClick={() => void save.run('json')}>
        ⤓ JSON
      </button>
      {save.error ? <span class="error">{messageOf(save.error)}</span> : null}
    </span>
  )
}

/** The search box over the conversation list: results (with their excerpts) while it holds words. */
export function useConversationSearch() {
  const [query, setQuery] = useState('')
  const [results, setResults] = useState<{ id: string; title: string; match: string; updatedAt: string; access?: string; owner?: { email: string } }[] | null>(null)
  const [error, setError] = useState<unknown>(null)
  useEffect(() => {
    const words = query.trim()
    if (!/[\p{L}\p{N}]/u.test(words)) {
      setResults(null)
      setError(null)
      return
    }
    const controller = new AbortController()
    const timer = setTimeout(() => {
      api<{ conversations: { id: string; title: string; match: string; updatedAt: string }[] }>('GET', `/conversations?q=${encodeURIComponent(words)}&limit=20`, undefined, controller.signal)
        .then(({ conversations }) => (setResults(conversations), setError(null)))
        .catch((failure) => controller.signal.aborted || setError(failure))
    }, 200)
    return () => (clearTimeout(timer), controller.abort())
  }, [query])
  return { query, setQuery, results, error }
}

export { ErrorText }
