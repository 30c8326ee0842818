import { useEffect, useRef, useState } from 'preact/hooks'
import { api, request } from '../api'
import { navigate, route } from '../router'
import { readEvents } from '../sse'
import { type Collection, labelOf, refOf } from '../collections'
import { ErrorText, useId } from '../ui'
import { type Conversation, ConversationItem, type Message, MessageView, type Source, SourcePanel } from './chat-parts'
import { type Assistant, assistantRef, pickedAssistant } from '../assistants'
import { AssistantPicker, AssistantStarters } from './chat-assistant'
import { ShareDialog } from './share-dialog'
import { AttachButton, EditableMessage, ExportButtons, FileChips, type Rating, ReplyActions, useConversationFiles, useConversationSearch } from './chat-everyday'

/** What a streamed exchange does: a new message, a new last reply, or an edited message answered again. */
type Turn = { kind: 'send'; text: string } | { kind: 'regenerate' } | { kind: 'edit'; index: number; id: string; text: string }

export function ChatPage({ conversationId }: { conversationId: string | null }) {
  const [conversations, setConversations] = useState<Conversation[]>([])
  const [listError, setListError] = useState<unknown>(null)
  const [messages, setMessages] = useState<Message[]>([])
  const [shown, setShown] = useState<Conversation | null>(null)
  const [loadError, setLoadError] = useState<unknown>(null)
  const [draft, setDraft] = useState('')
  const [collections, setCollections] = useState<Collection[]>([])
  const [collection, setCollection] = useState('')
  const [streaming, setStreaming] = useState<AbortController | null>(null)
  const [sendError, setSendError] = useState<unknown>(null)
  const [cited, setCited] = useState<{ source: Source; question: string } | null>(null)
  const [ratings, setRatings] = useState<Record<string, Rating>>({})
  const [dropping, setDropping] = useState(false)
  const [sharing, setSharing] = useState(false)
  const [assistants, setAssistants] = useState<Assistant[]>([])
  const [assistant, setAssistant] = useState(pickedAssistant.peek())
  const [kept, setKept] = useState<{ id: string; name: string } | null>(null)
  const streamedFor = useRef<string | null>(null)
  const bottom = useRef<HTMLDivElement>(null)
  const messageId = useId('message')
  const collectionId = useId('collection')
  const searchId = useId('search')
  const search = useConversationSearch()
  const readOnly = shown?.access === 'viewer'

  const loadList = () =>
    api<{ conversations: Conversation[] }>('GET', '/conversations?limit=100')
      .then(({ conversations }) => {
        setConversations([...conversations].sort((a, b) => b.updatedAt.localeCompare(a.updatedAt)))
        setListError(null)
      })
      .catch(setListError)

  /** The open conversation as stored (its messages with their ids) and the caller's ratings of its replies. */
  const loadConversation = (id: string) =>
    Promise.all([api<Conversation>('GET', `/conversations/${id}`), api<{ ratings: Record<string, { rating: Rating }> }>('GET', `/conversations/${id}/feedback`)]).then(([c, rated]) => {
      if (route.value.split('/')[2] !== id) return
      setShown(c)
      setMessages(c.messages)
      setKept(c.assistant ?? null)
      setRatings(Object.fromEntries(Object.entries(rated.ratings).map(([message, r]) => [message, r.rating])))
    }, setLoadError)

  /** The open conversation, made (empty) when there is none yet: files need one to go with. */
  const ensureConversation = async () => {
    if (conversationId) return conversationId
    const made = await api<Conversation>('POST', '/conversations', {})
    streamedFor.current = made.id
    navigate(`/chat/${made.id}`)
    void loadList()
    return made.id
  }
  const files = useConversationFiles(conversationId, ensureConversation)

  useEffect(() => {
    void loadList()
    api<{ collections: Collection[] }>('GET', '/rag/collections').then(({ collections }) => setCollections(collections), setListError)
    api<{ assistants: Assistant[] }>('GET', '/assistants').then(({ assistants }) => setAssistants(assistants), setListError)
    pickedAssistant.value = ''
  }, [])

  useEffect(() => {
    setCited(null)
    setLoadError(null)
    setSharing(false)
    // The conversation this page just streamed into is already on screen.
    if (conversationId && streamedFor.current === conversationId) return
    streamedFor.current = null
    setShown(null)
    setRatings({})
    setKept(null)
    if (!conversationId) {
      setMessages([])
      return
    }
    void loadConversation(conversationId)
  }, [conversationId])

  useEffect(() => {
    bottom.current?.scrollIntoView?.({ block: 'end' })
    if (streaming && performance.getEntriesByName('ua:first-chunk').length && !performance.getEntriesByName('ua:first-chunk-shown').length) {
      requestAnimationFrame(() => performance.mark('ua:first-chunk-shown'))
    }
  }, [messages])

  const run = async (turn: Turn) => {
    if (streaming || readOnly) return
    const controller = new AbortController()
    setStreaming(controller)
    setSendError(null)
    const reply: Message = { role: 'assistant', content: '', metadata: {} }
    if (turn.kind === 'send') setMessages((list) => [...list, { role: 'user', content: turn.text }, reply])
    else if (turn.kind === 'regenerate') setMessages((list) => [...list.slice(0, -1), reply])
    else setMessages((list) => [...list.slice(0, turn.index), { ...list[turn.index]!, content: turn.text }, reply])
    const update = (change: Partial<Message> & { metadata?: Message['metadata'] }) =>
      setMessages((list) => {
        const copy = list.slice()
        const last = copy[copy.length - 1]!
        copy[copy.length - 1] = { ...last, ...change, metadata: { ...last.metadata, ...change.metadata } }
        return copy
      })
    const sse = { signal: controller.signal, headers: { accept: 'text/event-stream', 'content-type': 'application/json' } }
    const grounding = collection ? { collection } : {}
    let content = ''
    let id = conversationId
    try {
      let response: Response
      if (turn.kind === 'send') {
        const params = new URLSearchParams({ message: turn.text })
        if (conversationId) params.set('conversationId', conversationId)
        if (collection) params.set('collection', collection)
        // A conversation keeps its assistant (the server knows it): only a new chat names one.
        if (assistant && !conversationId && !kept) params.set('assistant', assistant)
        response = await request(`/stream?${params}`, { signal: controller.signal, headers: { accept: 'text/event-stream' } })
      } else if (turn.kind === 'regenerate') {
        response = await request(`/conversations/${conversationId}/regenerate`, { ...sse, method: 'POST', body: JSON.stringify(grounding) })
      } else {
        response = await request(`/conversations/${conversationId}/messages/${turn.id}`, { ...sse, method: 'PATCH', body: JSON.stringify({ content: turn.text, ...grounding }) })
      }
      await readEvents(response, (event) => {
        if (event.type === 'start') {
          id = event.conversationId as string
          streamedFor.current = id
          const named = event.assistant as { id: string; name: string } | undefined
          update({ metadata: { model: event.model as string, sources: event.sources as Source[] | undefined, ...(named ? { assistant: named } : {}) } })
          if (named) setKept(named)
          if (!conversationId) history.replaceState(null, '', `/app/chat/${id}`)
        } else if (event.type === 'chunk') {
          if (!content) performance.mark('ua:first-chunk')
          content += event.content as string
          update({ content })
        } else if (event.type === 'error') {
          update({ metadata: { error: event.message as string } })
        }
      })
    } catch (error) {
      if (controller.signal.aborted) update({ metadata: { cancelled: true } })
      else {
        setSendError(error)
        if (!content) setMessages((list) => list.slice(0, -1))
      }
    } finally {
      setStreaming(null)
      if (id && id !== conversationId) route.value = `/chat/${id}`
      // A stopped reply is stored by the server as it ends: read back a moment later (with the
      // stored messages' ids, which rating, editing and regenerating name).
      setTimeout(() => {
        void loadList()
        if (id) void loadConversation(id)
      }, controller.signal.aborted ? 400 : 0)
    }
  }

  const send = (typed?: string) => {
    const text = (typed ?? draft).trim()
    if (!text || streaming) return
    if (typed === undefined) setDraft('')
    void run({ kind: 'send', text })
  }

  const rate = async (message: Message, rating: Rating) => {
    if (!conversationId || !message.id) return
    try {
      await api('POST', `/conversations/${conversationId}/messages/${message.id}/feedback`, { rating })
      setRatings((all) => ({ ...all, [message.id!]: rating }))
    } catch (error) {
      setSendError(error)
    }
  }

  const picked = kept ? null : (assistants.find((a) => assistantRef(a) === assistant) ?? null)
  const questionBefore = (index: number) => [...messages.slice(0, index)].reverse().find((m) => m.role === 'user')?.content ?? ''
  const openSource = (source: Source, index: number) =>
    setCited({ source: source.file && conversationId ? { ...source, collection: `__conversation-${conversationId}` } : source, question: questionBefore(index) })
  const lastReply = messages.length - 1

  return (
    <div class="chat">
      <section class="convs card" aria-label="Conversations">
        <button class="primary" type="button" onClick={() => navigate('/chat')}>
          New chat
        </button>
        <label for={searchId} class="skip">
          Search conversations
        </label>
        <input id={searchId} type="search" placeholder="Search conversations" value={search.query} maxLength={500} onInput={(e) => search.setQuery(e.currentTarget.value)} />
        <ErrorText error={search.error ?? listError} />
        {search.results ? (
          <ul aria-label="Search results, newest first">
            {search.results.map((c) => (
              <li key={c.id} class="found" aria-current={c.id === conversationId ? 'true' : undefined}>
                <a href={`/app/chat/${c.id}`} onClick={(event) => (event.preventDefault(), navigate(`/chat/${c.id}`))}>
                  <strong>{c.title}</strong>
                  {c.access === 'viewer' && <span class="muted small"> · shared by {c.owner?.email}</span>}
                  <span class="match">{c.match}</span>
                </a>
              </li>
            ))}
            {search.results.length === 0 && <li class="muted small">No conversation holds these words.</li>}
          </ul>
        ) : (
          <ul aria-label="Conversation history, newest first">
            {conversations.map((c) => (
              <ConversationItem
                key={c.id}
                conversation={c}
                current={c.id === conversationId}
                onOpen={() => navigate(`/chat/${c.id}`)}
                onChanged={(deleted) => {
                  if (deleted && c.id === conversationId) navigate('/chat')
                  void loadList()
                }}
              />
            ))}
            {conversations.length === 0 && <li class="muted small">No conversations yet.</li>}
          </ul>
        )}
      </section>
      <section
        class={`thread${dropping ? ' dropping' : ''}`}
        aria-label="Chat"
        onDragOver={(event) => {
          if (readOnly || !event.dataTransfer?.types.includes('Files')) return
          event.preventDefault()
          setDropping(true)
        }}
        onDragLeave={() => setDropping(false)}
        onDrop={(event) => {
          if (readOnly || !event.dataTransfer?.files.length) return
          event.preventDefault()
          setDropping(false)
          void files.attach([...event.dataTransfer.files])
        }}
      >
        {conversationId && messages.length > 0 && (
          <div class="thread-bar">
            {readOnly && <span class="muted small">Shared with you by {shown?.owner?.email} · read only</span>}
            <ExportButtons conversationId={conversationId} />
            {!readOnly && (
              <button type="button" onClick={() => setSharing(true)}>
                Share
              </button>
            )}
          </div>
        )}
        {sharing && conversationId && (
          <ShareDialog
            collection={conversationId}
            label={shown?.title ?? 'this conversation'}
            accessPath={`/conversations/${conversationId}/access`}
            roles={['viewer']}
            help={`Viewers read, export and rate it at /app/c/${conversationId}; only you post to it.`}
            onClose={() => setSharing(false)}
          />
        )}
        <div class="messages" aria-live="polite">
          <ErrorText error={loadError} />
          {messages.length === 0 && !loadError && picked && <AssistantStarters assistant={picked} onStart={(text) => send(text)} />}
          {messages.length === 0 && !loadError && !picked && (
            <div class="muted">
              <h1>New chat</h1>
              <p>Ask anything. Pick a collection to ground the answer in your documents, or drop files here (📎) to ask about them; cited passages show as [n].</p>
            </div>
          )}
          {messages.map((message, index) =>
            message.role === 'user' && message.id && !readOnly ? (
              <EditableMessage key={message.id} message={message} disabled={!!streaming} onSave={(text) => void run({ kind: 'edit', index, id: message.id!, text })} />
            ) : (
              <MessageView key={message.id ?? index} message={message} onCite={(source) => openSource(source, index)}>
                {message.role === 'assistant' && !streaming && (
                  <ReplyActions
                    message={message}
                    rating={message.id ? ratings[message.id] : undefined}
                    onRate={(rating) => void rate(message, rating)}
                    onRegenerate={index === lastReply && !readOnly ? () => void run({ kind: 'regenerate' }) : undefined}
                  />
                )}
              </MessageView>
            ),
          )}
          {cited && <SourcePanel source={cited.source} question={cited.question} onClose={() => setCited(null)} />}
          <div ref={bottom} />
        </div>
        <FileChips files={files.files} readOnly={readOnly} onRemove={(file) => void files.remove(file)} />
        <ErrorText error={files.error} />
        {!readOnly && (
          <form
            class="composer"
            onSubmit={(event) => {
              event.preventDefault()
              send()
            }}
          >
            <label for={messageId} class="skip">
              Message
            </label>
            <textarea
              id={messageId}
              rows={2}
              placeholder="Message (Enter sends, Shift+Enter for a new line)"
              value={draft}
              maxLength={32000}
              onInput={(e) => setDraft(e.currentTarget.value)}
              onKeyDown={(e) => {
                if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
                  e.preventDefault()
                  send()
                }
              }}
            />
            <AttachButton onFiles={(chosen) => void files.attach(chosen)} disabled={!!streaming} />
            <AssistantPicker assistants={assistants} value={assistant} kept={kept} onChange={setAssistant} />
            <div>
              <label for={collectionId}>Ground in</label>
              <select id={collectionId} value={collection} onChange={(e) => setCollection(e.currentTarget.value)}>
                <option value="">No collection</option>
                {collections.map((c) => (
                  <option value={refOf(c)}>{labelOf(c)}</option>
                ))}
              </select>
            </div>
            {streaming ? (
              <button type="button" class="danger" onClick={() => streaming.abort()}>
                Stop
              </button>
            ) : (
              <button type="submit" class="primary" disabled={!draft.trim()}>
                Send
              </button>
            )}
          </form>
        )}
        <ErrorText error={sendError} />
      </section>
    </div>
  )
}
