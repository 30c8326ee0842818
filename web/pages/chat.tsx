import { useEffect, useRef, useState } from 'preact/hooks'
import { api, request } from '../api'
import { navigate, route } from '../router'
import { readEvents } from '../sse'
import { type Collection, labelOf, refOf } from '../collections'
import { ErrorText, useId } from '../ui'
import { type Conversation, ConversationItem, type Message, MessageView, type Source, SourcePanel } from './chat-parts'
import { type Assistant, assistantRef, pickedAssistant } from '../assistants'
import { AssistantPicker, AssistantStarters } from './chat-assistant'


export function ChatPage({ conversationId }: { conversationId: string | null }) {
  const [conversations, setConversations] = useState<Conversation[]>([])
  const [listError, setListError] = useState<unknown>(null)
  const [messages, setMessages] = useState<Message[]>([])
  const [loadError, setLoadError] = useState<unknown>(null)
  const [draft, setDraft] = useState('')
  const [collections, setCollections] = useState<Collection[]>([])
  const [collection, setCollection] = useState('')
  const [streaming, setStreaming] = useState<AbortController | null>(null)
  const [sendError, setSendError] = useState<unknown>(null)
  const [cited, setCited] = useState<{ source: Source; question: string } | null>(null)
  const [assistants, setAssistants] = useState<Assistant[]>([])
  const [assistant, setAssistant] = useState(pickedAssistant.peek())
  const [kept, setKept] = useState<{ id: string; name: string } | null>(null)
  const streamedFor = useRef<string | null>(null)
  const bottom = useRef<HTMLDivElement>(null)
  const messageId = useId('message')
  const collectionId = useId('collection')

  const loadList = () =>
    api<{ conversations: Conversation[] }>('GET', '/conversations?limit=100')
      .then(({ conversations }) => {
        setConversations([...conversations].sort((a, b) => b.updatedAt.localeCompare(a.updatedAt)))
        setListError(null)
      })
      .catch(setListError)

  useEffect(() => {
    void loadList()
    api<{ collections: Collection[] }>('GET', '/rag/collections').then(({ collections }) => setCollections(collections), setListError)
    api<{ assistants: Assistant[] }>('GET', '/assistants').then(({ assistants }) => setAssistants(assistants), setListError)
    pickedAssistant.value = ''
  }, [])

  useEffect(() => {
    setCited(null)
    setLoadError(null)
    // The conversation this page just streamed into is already on screen.
    if (conversationId && streamedFor.current === conversationId) return
    streamedFor.current = null
    setKept(null)
    if (!conversationId) {
      setMessages([])
      return
    }
    api<Conversation>('GET', `/conversations/${conversationId}`).then((c) => (setMessages(c.messages), setKept(c.assistant ?? null)), setLoadError)
  }, [conversationId])

  useEffect(() => {
    bottom.current?.scrollIntoView?.({ block: 'end' })
    if (streaming && performance.getEntriesByName('ua:first-chunk').length && !performance.getEntriesByName('ua:first-chunk-shown').length) {
      requestAnimationFrame(() => performance.mark('ua:first-chunk-shown'))
    }
  }, [messages])

  const send = async (typed?: string) => {
    const text = (typed ?? draft).trim()
    if (!text || streaming) return
    const controller = new AbortController()
    setStreaming(controller)
    setSendError(null)
    setDraft('')
    const reply: Message = { role: 'assistant', content: '', metadata: {} }
    setMessages((list) => [...list, { role: 'user', content: text }, reply])
    const update = (change: Partial<Message> & { metadata?: Message['metadata'] }) =>
      setMessages((list) => {
        const copy = list.slice()
        const last = copy[copy.length - 1]!
        copy[copy.length - 1] = { ...last, ...change, metadata: { ...last.metadata, ...change.metadata } }
        return copy
      })
    const params = new URLSearchParams({ message: text })
    if (conversationId) params.set('conversationId', conversationId)
    if (collection) params.set('collection', collection)
    // A conversation keeps its assistant (the server knows it): only a new chat names one.
    if (assistant && !conversationId && !kept) params.set('assistant', assistant)
    let content = ''
    let id = conversationId
    try {
      const response = await request(`/stream?${params}`, { signal: controller.signal, headers: { accept: 'text/event-stream' } })
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
      // A stopped reply is stored by the server as it ends: list it a moment later.
      setTimeout(() => void loadList(), controller.signal.aborted ? 400 : 0)
    }
  }

  const picked = kept ? null : (assistants.find((a) => assistantRef(a) === assistant) ?? null)
  const questionBefore = (index: number) => [...messages.slice(0, index)].reverse().find((m) => m.role === 'user')?.content ?? ''

  return (
    <div class="chat">
      <section class="convs card" aria-label="Conversations">
        <button class="primary" type="button" onClick={() => navigate('/chat')}>
          New chat
        </button>
        <ErrorText error={listError} />
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
      </section>
      <section class="thread" aria-label="Chat">
        <div class="messages" aria-live="polite">
          <ErrorText error={loadError} />
          {messages.length === 0 && !loadError && picked && <AssistantStarters assistant={picked} onStart={(text) => void send(text)} />}
          {messages.length === 0 && !loadError && !picked && (
            <div class="muted">
              <h1>New chat</h1>
              <p>Ask anything. Pick a collection to ground the answer in your documents; cited passages show as [n].</p>
            </div>
          )}
          {messages.map((message, index) => (
            <MessageView key={index} message={message} onCite={(source) => setCited({ source, question: questionBefore(index) })} />
          ))}
          {cited && <SourcePanel source={cited.source} question={cited.question} onClose={() => setCited(null)} />}
          <div ref={bottom} />
        </div>
        <form
          class="composer"
          onSubmit={(event) => {
            event.preventDefault()
            void send()
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
                void send()
              }
            }}
          />
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
        <ErrorText error={sendError} />
      </section>
    </div>
  )
}
