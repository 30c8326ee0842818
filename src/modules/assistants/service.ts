import type { Static } from 'elysia'
import { randomUUID } from 'node:crypto'
import { AppError } from '../../core/errors'
import type { ChatMessage, Generator } from '../../ml'
import { type Need, type ResourceKind, ResourceResolver } from '../access/resolver'
import type { Access } from '../access/roles'
import { type AccessView, ResourceSharing, type ShareInput } from '../access/sharing'
import { AGENTS } from '../agents/catalog'
import type { AgentDefinition } from '../agents/types'
import { assistantAgent } from './agent'
import type { AssistantPersona } from './persona'
import type { AuditContext, AuditRecorder } from '../audit/service'
import type { PluginToolbox } from '../plugins/tools'
import type { Grounding, GroundingSource } from '../rag/answer/grounding'
import type { CollectionSharing } from '../rag/access/sharing'
import type { RagService } from '../rag/service'
import type { RagStore } from '../rag/store'
import { ASSISTANT_NAME, AssistantView as AssistantViewSchema } from './model'
import type { AssistantRow, AssistantStore } from './store'

/** Assistants as a kind of shared object: the one resolver's rules, AMBIGUOUS_ASSISTANT. */
export const ASSISTANT_KIND: ResourceKind = { noun: 'assistant', label: 'Assistant', plural: 'assistants', ambiguous: 'AMBIGUOUS_ASSISTANT', names: ASSISTANT_NAME }
/** Built-in agents' ids as assistants: `builtin:researcher`. */
export const BUILTIN_PREFIX = 'builtin:'
/** A /v1 model that answers as an assistant: `assistant:<owner email>/<name>`. */
export const ASSISTANT_MODEL_PREFIX = 'assistant:'
const BUILTIN_OWNER = { id: 'builtin', email: 'builtin' }

export interface AssistantInput {
  name?: string
  description?: string
  instructions?: string
  collections?: string[]
  tools?: string[]
  model?: string | null
  temperature?: number | null
  starters?: string[]
}

/** An assistant as the API shows it (the schema in model.ts). */
export type AssistantView = Static<typeof AssistantViewSchema>

export interface AssistantDeps {
  store: AssistantStore
  rag: () => RagService<RagStore>
  collectionSharing: () => CollectionSharing
  tools: () => PluginToolbox
  generator: () => Promise<Generator>
  grounding: () => Grounding | null
  audit?: AuditRecorder
}

type Context = AuditContext & { userId: string }

const parseList = (text: string): string[] => {
  try {
    const parsed = JSON.parse(text) as unknown
    return Array.isArray(parsed) ? parsed.filter((item): item is string => typeof item === 'string') : []
  } catch {
    return []
  }
}

const isMissing = (error: unknown) => error instanceof AppError && (error.code === 'NOT_FOUND' || error.code === 'FORBIDDEN')

function isUniqueViolation(error: unknown): boolean {
  const { message, errno, code } = error as { message?: string; errno?: string; code?: string }
  return String(message).includes('UNIQUE') || errno === '23505' || code === '23505' || String(message).includes('duplicate key')
}

/**
 * Assistants: named presets of instructions, collections, tools, model and temperature that a
 * user makes and shares, used with the rights of whoever uses them. Who reaches one is answered by
 * the one resolver (ResourceResolver, as for collections); its collections are read through the
 * collection resolver with the caller's id, so an assistant never reads more than its user could.
 */
export class AssistantService {
  readonly resolver: ResourceResolver<AssistantRow>
  readonly sharing: ResourceSharing<AssistantRow>

  constructor(private readonly deps: AssistantDeps) {
    this.resolver = new ResourceResolver(ASSISTANT_KIND, deps.store)
    this.sharing = new ResourceSharing(this.resolver, deps.store, { key: (row) => row.id, target: (row) => row.id }, deps.audit)
  }

  get store(): AssistantStore {
    return this.deps.store
  }

  /** The caller's own assistants, those shared with them, then the built-in agents (read-only). */
  async list(userId: string): Promise<{ assistants: AssistantView[] }> {
    const rows = await this.deps.store.accessibleRows(userId)
    rows.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : a.owner_email < b.owner_email ? -1 : 1))
    const views = await Promise.all(rows.map((row) => this.view(userId, row, row.access, row.owner_email)))
    return { assistants: [...views, ...AGENTS.map((agent) => builtinView(agent))] }
  }

  async get(userId: string, ref: string): Promise<AssistantView> {
    const builtin = this.builtinNamed(ref)
    if (builtin && ref.startsWith(BUILTIN_PREFIX)) return builtinView(builtin)
    try {
      const { row, access } = await this.resolver.resolveRow(userId, ref)
      return await this.view(userId, row, access)
    } catch (error) {
      if (builtin && error instanceof AppError && error.code === 'NOT_FOUND') return builtinView(builtin)
      throw error
    }
  }

  async create(context: Context, input: AssistantInput & { name: string }): Promise<AssistantView> {
    const userId = context.userId
    const now = new Date().toISOString()
    const row: AssistantRow = {
      id: randomUUID(),
      user_id: userId,
      name: input.name,
      description: input.description ?? '',
      instructions: input.instructions ?? '',
      collections: JSON.stringify(await this.collectionIds(userId, input.collections ?? [])),
      tools: JSON.stringify(this.checkedTools(input.tools ?? [])),
      model: await this.checkedModel(input.model ?? null),
      temperature: input.temperature ?? null,
      starters: JSON.stringify(input.starters ?? []),
      created_at: now,
      updated_at: now,
    }
    this.checkName(row.name)
    try {
      await this.deps.store.insert(row)
    } catch (error) {
      if (isUniqueViolation(error)) throw new AppError('CONFLICT', `You already have an assistant named ${row.name}`)
      throw error
    }
    this.record(context, 'assistant.created', row, { name: row.name })
    return this.view(userId, row, 'owner')
  }

  async update(context: Context, ref: string, input: AssistantInput): Promise<AssistantView> {
    this.refuseBuiltin(ref)
    const { row, access } = await this.resolver.resolveRow(context.userId, ref, 'editor')
    const next: AssistantRow = { ...row, updated_at: new Date().toISOString() }
    const changed: string[] = []
    if (input.name !== undefined && input.name !== row.name) {
      this.checkName(input.name)
      next.name = input.name
      changed.push('name')
    }
    if (input.description !== undefined) (next.description = input.description), changed.push('description')
    if (input.instructions !== undefined) (next.instructions = input.instructions), changed.push('instructions')
    if (input.collections !== undefined) {
      // The caller's list replaces what they can see; the collections they cannot read stay (they could not name them).
      const hidden: string[] = []
      for (const id of parseList(row.collections)) if (!(await this.readable(context.userId, id))) hidden.push(id)
      const had = parseList(row.collections)
      next.collections = JSON.stringify([...new Set([...(await this.collectionIds(context.userId, input.collections, { id: row.user_id, had })), ...hidden])])
      changed.push('collections')
    }
    if (input.tools !== undefined) (next.tools = JSON.stringify(this.checkedTools(input.tools))), changed.push('tools')
    if (input.model !== undefined) (next.model = await this.checkedModel(input.model)), changed.push('model')
    if (input.temperature !== undefined) (next.temperature = input.temperature), changed.push('temperature')
    if (input.starters !== undefined) (next.starters = JSON.stringify(input.starters)), changed.push('starters')
    try {
      await this.deps.store.update(next)
    } catch (error) {
      if (isUniqueViolation(error)) throw new AppError('CONFLICT', `The owner already has an assistant named ${next.name}`)
      throw error
    }
    this.record(context, 'assistant.updated', next, { name: next.name, changed })
    return this.view(context.userId, next, access)
  }

  async delete(context: Context, ref: string): Promise<{ success: boolean; id: string }> {
    this.refuseBuiltin(ref)
    const { row } = await this.resolver.resolveRow(context.userId, ref, 'manager')
    await this.deps.store.delete(row.id)
    this.record(context, 'assistant.deleted', row, { name: row.name })
    return { success: true, id: row.id }
  }

  async access(userId: string, ref: string): Promise<AccessView> {
    this.refuseBuiltin(ref)
    return this.sharing.get(userId, ref)
  }

  /**
   * Replaces the access list. With `shareCollections`, the same users and groups also get viewer on
   * the assistant's collections that the caller manages (an entry already there keeps its role);
   * the others are left as they are (the caller may not change them).
   */
  async replaceAccess(context: Context, ref: string, shares: ShareInput[], shareCollections = false): Promise<AccessView & { collectionsShared?: string[] }> {
    this.refuseBuiltin(ref)
    const { row } = await this.resolver.resolveRow(context.userId, ref, 'manager')
    const after = await this.sharing.replaceFor(context, row, shares)
    if (!shareCollections) return after
    const shared: string[] = []
    const rag = this.deps.rag()
    const collectionSharing = this.deps.collectionSharing()
    for (const id of parseList(row.collections)) {
      let collection
      try {
        collection = (await rag.resolve(context.userId, id, 'manager')).collection
      } catch (error) {
        if (isMissing(error)) continue
        throw error
      }
      const current = await collectionSharing.get(context.userId, id)
      const entries: ShareInput[] = current.shares.map(toInput)
      const has = new Set(current.shares.map((s) => `${s.type}:${s.id ?? ''}`))
      for (const share of after.shares) {
        if (has.has(`${share.type}:${share.id ?? ''}`)) continue
        if (share.type === 'user' && share.id === collection.user_id) continue
        entries.push({ ...toInput(share), role: 'viewer' })
      }
      if (entries.length !== current.shares.length) await collectionSharing.replace(context, id, entries)
      shared.push(`${current.owner.email}/${collection.name}`)
    }
    return { ...after, collectionsShared: shared }
  }

  /**
   * The assistant a reference names, as the caller may use it now (see AssistantPersona): 404
   * without access. A built-in agent is reached as `builtin:<name>`, or by its name when nothing
   * of the caller's or shared with them has that name.
   */
  async persona(userId: string, ref: string, options: { deferCollections?: boolean } = {}): Promise<AssistantPersona> {
    const builtin = this.builtinNamed(ref)
    if (builtin && ref.startsWith(BUILTIN_PREFIX)) return this.builtinPersona(builtin)
    let row: AssistantRow
    try {
      row = (await this.resolver.resolveRow(userId, ref, 'viewer')).row
    } catch (error) {
      if (builtin && error instanceof AppError && error.code === 'NOT_FOUND') return this.builtinPersona(builtin)
      throw error
    }
    // Chat's grounding checks them itself as it searches (one look-up each, as for a collection named
    // in the request), leaving out and counting those the caller cannot read.
    if (options.deferCollections) return { ...this.personaOf(row, parseList(row.collections), 0), deferred: true }
    // Each collection checked with the caller's rights, all at once (PostgreSQL: round trips overlap).
    const readable = await Promise.all(parseList(row.collections).map((id) => this.readable(userId, id)))
    const collections = readable.filter((ref): ref is string => ref !== null)
    return this.personaOf(row, collections, readable.length - collections.length)
  }

  private personaOf(row: AssistantRow, collections: string[], skipped: number): AssistantPersona {
    const tools = parseList(row.tools)
    const runnable = tools.length ? new Set(this.deps.tools().list().map((tool) => tool.name)) : null
    return {
      id: row.id,
      name: row.name,
      description: row.description,
      instructions: row.instructions,
      collections,
      collectionsSkipped: skipped,
      tools: runnable ? tools.filter((tool) => runnable.has(tool)) : [],
      model: row.model,
      temperature: row.temperature,
      starters: parseList(row.starters),
      builtin: false,
    }
  }

  /**
   * The prompt of one turn as the assistant: its instructions as the system prompt, the passages of
   * its readable collections for the question, then the conversation. Used by /v1 and MCP (chat
   * builds its own, with history and storage: ChatService).
   */
  async prompt(persona: AssistantPersona, userId: string, conversation: ChatMessage[], generator: Generator): Promise<{ messages: ChatMessage[]; sources: GroundingSource[]; collectionsSkipped: number }> {
    const question = [...conversation].reverse().find((m) => m.role === 'user')?.content ?? ''
    const earlier = conversation.filter((m) => m.role === 'user').map((m) => m.content).slice(0, -1)
    const grounding = this.deps.grounding()
    const optional = persona.deferred ? { optional: new Set(persona.collections) } : undefined
    const grounded = persona.collections.length && grounding && question ? await grounding.ground(userId, persona.collections, question, earlier, generator, optional) : null
    const messages: ChatMessage[] = []
    if (persona.instructions.trim()) messages.push({ role: 'system', content: persona.instructions.trim() })
    if (grounded?.context) messages.push({ role: 'system', content: `Context:\n${grounded.context}` })
    messages.push(...conversation)
    return { messages, sources: grounded?.sources ?? [], collectionsSkipped: persona.collectionsSkipped + (grounded?.skipped ?? 0) }
  }

  /** One question answered as the assistant (MCP ask_assistant): nothing stored. */
  async ask(userId: string, ref: string, question: string, signal?: AbortSignal) {
    const persona = await this.persona(userId, ref, { deferCollections: true })
    const generator = await this.deps.generator()
    const { messages, sources, collectionsSkipped } = await this.prompt(persona, userId, [{ role: 'user', content: question }], generator)
    const result = await generator.generate(messages, { ...(persona.temperature !== null ? { temperature: persona.temperature } : {}) }, signal)
    return { answer: result.text, assistant: { id: persona.id, name: persona.name }, model: generator.id, sources, collectionsSkipped }
  }

  /** `assistant:<owner email>/<name>` for every assistant the caller may use (/v1/models). */
  async models(userId: string): Promise<{ id: string; created: number; owner: string }[]> {
    const rows = await this.deps.store.accessibleRows(userId)
    return rows.map((row) => ({ id: `${ASSISTANT_MODEL_PREFIX}${row.owner_email}/${row.name}`, created: Math.floor(Date.parse(row.created_at) / 1000), owner: row.user_id }))
  }

  /** The assistant as an agent of a task, for the caller now (see assistantAgent). */
  async agent(userId: string, ref: string): Promise<AgentDefinition> {
    return assistantAgent(`${ASSISTANT_MODEL_PREFIX}${ref}`, await this.persona(userId, ref))
  }

  /** The resolver's check alone (agent tasks validate their `assistant:` entries with it). */
  async check(userId: string, ref: string, need: Need = 'viewer'): Promise<void> {
    if (this.builtinNamed(ref) && ref.startsWith(BUILTIN_PREFIX)) return
    await this.persona(userId, ref)
    if (need !== 'viewer') await this.resolver.resolveRow(userId, ref, need)
  }

  /** The collection reference the caller reads a collection (by public id) through, or null when they cannot. */
  private async readable(userId: string, publicId: string): Promise<string | null> {
    try {
      const { collection, access } = await this.deps.rag().resolve(userId, publicId)
      if (access === 'owner') return collection.name
      const owner = await this.deps.rag().resolver.store.owner(collection.user_id)
      return `${owner?.email ?? collection.user_id}/${collection.name}`
    } catch (error) {
      if (isMissing(error)) return null
      throw error
    }
  }

  /** The public ids of collections the caller names (each must be readable by them: 404 otherwise). */
  private async collectionIds(userId: string, refs: string[], owner?: { id: string; had: string[] }): Promise<string[]> {
    const ids: string[] = []
    for (const ref of refs) {
      const id = (await this.deps.rag().resolve(userId, ref)).collection.public_id
      // An editor adding a collection: its owner must be able to read it too (the contract's rule; 404 as for any collection out of reach).
      if (owner && owner.id !== userId && !owner.had.includes(id) && !(await this.readable(owner.id, id))) throw new AppError('NOT_FOUND', `Collection ${ref} not found for the assistant's owner: they cannot read it`)
      ids.push(id)
    }
    return [...new Set(ids)]
  }

  private checkedTools(tools: string[]): string[] {
    const known = new Set(this.deps.tools().list().map((tool) => tool.name))
    tools.forEach((tool, i) => {
      if (!known.has(tool)) throw new AppError('VALIDATION_ERROR', `body.tools[${i}]: no tool named ${tool} (GET /plugins lists the plugins' actions, as <plugin>__<action>)`)
    })
    return [...new Set(tools)]
  }

  private async checkedModel(model: string | null): Promise<string | null> {
    if (model === null) return null
    const generator = await this.deps.generator()
    if (model !== generator.id) throw new AppError('VALIDATION_ERROR', `body.model: this server serves the chat model ${generator.id}, not ${model}`)
    return model
  }

  private checkName(name: string): void {
    if (!ASSISTANT_NAME.test(name)) throw new AppError('VALIDATION_ERROR', 'body.name: 1..64 characters, no "/", not starting with a space')
    if (name.startsWith(BUILTIN_PREFIX) || name.startsWith(ASSISTANT_MODEL_PREFIX)) throw new AppError('VALIDATION_ERROR', `body.name: may not start with ${name.startsWith(BUILTIN_PREFIX) ? BUILTIN_PREFIX : ASSISTANT_MODEL_PREFIX}`)
  }

  private builtinNamed(ref: string) {
    const name = ref.startsWith(BUILTIN_PREFIX) ? ref.slice(BUILTIN_PREFIX.length) : ref
    return AGENTS.find((agent) => agent.name === name) ?? null
  }

  private refuseBuiltin(ref: string): void {
    if (ref.startsWith(BUILTIN_PREFIX) && this.builtinNamed(ref)) throw new AppError('FORBIDDEN', `${ref} is a built-in agent: it cannot be changed, shared or deleted`)
  }

  private builtinPersona(agent: (typeof AGENTS)[number]): AssistantPersona {
    const tools = this.deps.tools().list()
    return {
      id: `${BUILTIN_PREFIX}${agent.name}`,
      name: agent.name,
      description: agent.description,
      instructions: agent.instructions,
      collections: [],
      collectionsSkipped: 0,
      tools: tools.filter((tool) => agent.plugins === '*' || agent.plugins.includes(tool.plugin)).map((tool) => tool.name),
      model: null,
      temperature: null,
      starters: [],
      builtin: true,
    }
  }

  private async view(userId: string, row: AssistantRow, access: Access, ownerEmail?: string): Promise<AssistantView> {
    const rag = this.deps.rag()
    const collections: AssistantView['collections'] = []
    let hidden = 0
    for (const id of parseList(row.collections)) {
      try {
        const { collection } = await rag.resolve(userId, id)
        const owner = await rag.resolver.store.owner(collection.user_id)
        collections.push({ id: collection.public_id, name: collection.name, owner: owner ?? { id: collection.user_id, email: '' } })
      } catch (error) {
        if (!isMissing(error)) throw error
        hidden++
      }
    }
    const email = ownerEmail ?? (await this.deps.store.owner(row.user_id))?.email ?? ''
    return {
      id: row.id,
      name: row.name,
      description: row.description,
      instructions: row.instructions,
      collections,
      collectionsHidden: hidden,
      tools: parseList(row.tools),
      model: row.model,
      temperature: row.temperature,
      starters: parseList(row.starters),
      owner: { id: row.user_id, email },
      access,
      builtin: false,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
    }
  }

  private record(context: Context, action: string, row: AssistantRow, details: Record<string, unknown>): void {
    const { userId: _userId, ...audit } = context
    this.deps.audit?.record({ ...audit, action, target: row.id, details: { ...details, owner: row.user_id } })
  }
}

function toInput(share: { type: 'user' | 'group' | 'everyone'; id?: string; role: 'viewer' | 'editor' | 'manager' }): ShareInput {
  if (share.type === 'user') return { type: 'user', userId: share.id!, role: share.role }
  if (share.type === 'group') return { type: 'group', groupId: share.id!, role: share.role }
  return { type: 'everyone', role: share.role }
}

function builtinView(agent: (typeof AGENTS)[number]): AssistantView {
  return {
    id: `${BUILTIN_PREFIX}${agent.name}`,
    name: agent.name,
    description: agent.description,
    instructions: agent.instructions,
    collections: [],
    collectionsHidden: 0,
    tools: agent.plugins === '*' ? ['*'] : agent.plugins.map((plugin) => `${plugin}__*`),
    model: null,
    temperature: null,
    starters: [],
    owner: BUILTIN_OWNER,
    access: 'viewer',
    builtin: true,
    createdAt: new Date(0).toISOString(),
    updatedAt: new Date(0).toISOString(),
  }
}

