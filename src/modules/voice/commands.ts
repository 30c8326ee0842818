import { AppError } from '../../core/errors'
import { type Intent, intentClassifier } from '../../ml/intent/classifier'
import { arithmeticExpression, extractEntities, mentioned, searchTopic } from '../../ml/intent/entities'
import type { TranscribeMode } from '../../ml/speech/recognizer'
import { type AutopilotPreferences, type AutopilotSession, AutopilotStore, type Verbosity } from './autopilot'
import type { SpeechService } from './service'

export interface Caller {
  userId: string
  roles: string[]
}

/** What the autopilot reaches in other areas; each is optional, and what is missing is not offered. */
export interface VoiceActions {
  collectionNames(userId: string): string[] | Promise<string[]>
  search(userId: string, collection: string, query: string, limit: number): Promise<{ results: { id: string; content: string; score: number }[] }>
  answer?(userId: string, collection: string, question: string): Promise<{ answer: string; sources: { title: string }[] }>
  runTool?(caller: Caller, name: string, args: Record<string, unknown>): Promise<unknown>
  listToolNames?(): string[]
  startAgentTask?(caller: Caller, task: string, agents: string[]): Promise<{ taskId: string }>
  listAgentNames?(): string[]
  systemStatus?(): { status: string; uptime: number; memory: string }
  chat?(userId: string, message: string): Promise<string>
}

const ACTIONS: Record<Intent, string> = {
  chat: 'chat',
  rag_search: 'rag.search',
  rag_answer: 'rag.answer',
  plugin_execute: 'plugins.execute',
  agent_task: 'agents.execute',
  tts: 'voice.tts',
  autopilot_start: 'voice.autopilot:start',
  autopilot_stop: 'voice.autopilot:stop',
  system_status: 'system.health',
  time: 'system.time',
  unknown: 'none',
}

export interface CommandInput {
  command?: string
  audio?: Uint8Array
  mode?: TranscribeMode
  context?: string | null
  /** The request's signal: transcription and the spoken reply stop when it aborts. */
  signal?: AbortSignal
}

export interface VoiceCommandResult {
  success: boolean
  command: string
  intent: string
  entities: string[]
  action: string
  response: string
  audioResponse: string
  confidence: number
  executed: boolean
  result?: unknown
  transcript?: { text: string; confidence: number; duration: number; mode: TranscribeMode }
}

const MAX_SPOKEN = 2000
const pluginOf = (tool: string) => tool.split('__')[0]!

/** Voice commands: understood by the trained classifier, acted on by the autopilot. */
export class VoiceCommands {
  readonly autopilot: AutopilotStore

  constructor(
    private readonly speech: SpeechService,
    private readonly actions: VoiceActions,
  ) {
    this.autopilot = new AutopilotStore(speech.store)
  }

  pluginNames(): string[] {
    return [...new Set((this.actions.listToolNames?.() ?? []).map(pluginOf))]
  }

  agentNames(): string[] {
    return this.actions.listAgentNames?.() ?? []
  }

  /** The intents this server can carry out (the autopilot's `capabilities`). */
  capabilities(): string[] {
    const can: Intent[] = ['rag_search', 'rag_answer', 'tts', 'system_status', 'time', 'autopilot_start', 'autopilot_stop']
    if (this.actions.runTool && this.pluginNames().includes('calculator')) can.push('plugin_execute')
    if (this.actions.startAgentTask) can.push('agent_task')
    if (this.actions.chat) can.push('chat')
    return can
  }

  async autopilotRequest(userId: string, mode: 'start' | 'stop' | 'status', context: string | null | undefined, preferences: Partial<AutopilotPreferences>) {
    let session: AutopilotSession | null
    if (mode === 'start') session = await this.autopilot.start(userId, context, preferences)
    else if (mode === 'stop') session = await this.autopilot.stop(userId)
    else session = await this.autopilot.get(userId)
    return {
      success: true,
      mode,
      sessionId: session?.sessionId ?? '',
      status: session?.status ?? 'inactive',
      capabilities: this.capabilities(),
      preferences: session ? { verbosity: session.verbosity, autoExecute: session.autoExecute, voice: session.voice, speed: session.speed, timezone: session.timezone } : undefined,
    }
  }

  async handle(caller: Caller, input: CommandInput): Promise<VoiceCommandResult> {
    let command = input.command ?? ''
    let transcript: VoiceCommandResult['transcript']
    if (input.audio) {
      const heard = await this.speech.transcribe(caller.userId, input.audio, input.mode ?? 'commands', input.signal)
      transcript = { text: heard.text, confidence: heard.confidence, duration: heard.duration, mode: heard.mode }
      command = heard.text
    }
    const session = await this.autopilot.get(caller.userId)
    const prefs = session ?? { verbosity: 'medium' as Verbosity, autoExecute: false, voice: 'default', speed: 1, timezone: null }
    const collections = await this.actions.collectionNames(caller.userId)
    const classifier = await intentClassifier()
    const prediction = command.trim() ? classifier.predict(command) : { intent: 'unknown' as Intent, confidence: 0, best: 'unknown' as Intent }
    const intent = prediction.intent
    const entities = await extractEntities(command, { collections, plugins: this.pluginNames(), agents: this.agentNames() }, { timeZone: prefs.timezone ?? undefined })
    const expression = intent === 'plugin_execute' ? arithmeticExpression(command) : null
    if (expression && !entities.includes('plugin:calculator')) entities.push('plugin:calculator')
    const plugin = entities.find((e) => e.startsWith('plugin:'))?.slice(7)
    const action = intent === 'plugin_execute' && plugin ? `plugins.execute:${plugin}` : ACTIONS[intent]
    const execute = session?.status === 'active' && session.autoExecute
    const plan = { caller, command, intent, entities, collections, expression, plugin, verbosity: prefs.verbosity, timeZone: prefs.timezone, context: input.context ?? session?.context ?? null }
    let outcome: { response: string; result?: unknown; success?: boolean }
    if (execute) {
      try {
        outcome = await this.execute(plan)
      } catch (error) {
        if (!(error instanceof AppError)) throw error
        outcome = { response: `I could not do that: ${error.message}`, success: false }
      }
    } else outcome = { response: this.propose(plan) }
    // The spoken reply stops after MAX_SPOKEN characters (a long answer is still in `response`).
    const spoken = outcome.response.length > MAX_SPOKEN ? `${outcome.response.slice(0, MAX_SPOKEN).replace(/\s+\S*$/, '')}…` : outcome.response
    const audio = await this.speech.tts(caller.userId, { text: spoken, voice: prefs.voice, language: 'en-US', speed: prefs.speed, format: 'mp3' }, input.signal)
    return {
      success: outcome.success ?? true,
      command,
      intent,
      entities,
      action,
      response: outcome.response,
      audioResponse: audio.audioUrl,
      confidence: Math.round(prediction.confidence * 1000) / 1000,
      executed: execute,
      ...(outcome.result !== undefined ? { result: outcome.result } : {}),
      ...(transcript ? { transcript } : {}),
    }
  }

  private pickCollection(plan: Plan): string | null {
    const named = plan.entities.find((e) => e.startsWith('collection:'))?.slice(11)
    if (named) return named
    return plan.collections.length ? plan.collections[0]! : null
  }

  private propose(plan: Plan): string {
    const hint = ' Start the autopilot with autoExecute to have me do it.'
    const collection = this.pickCollection(plan)
    switch (plan.intent) {
      case 'rag_search':
        return `I can search ${collection ?? 'your documents'} for "${searchTopic(plan.command, plan.collections)}".${hint}`
      case 'rag_answer':
        return `I can answer that from ${collection ?? 'your documents'}.${hint}`
      case 'plugin_execute':
        return plan.expression ? `I can calculate ${plan.expression} with the calculator plugin.${hint}` : `I can run the ${plan.plugin ?? 'requested'} plugin.${hint}`
      case 'agent_task':
        return `I can start an agent task: "${plan.command}".${hint}`
      case 'tts':
        return `I can say: ${speakable(plan.command)}.${hint}`
      case 'autopilot_start':
        return 'I can start the autopilot: send mode "start" to /voice/autopilot.'
      case 'autopilot_stop':
        return 'I can stop the autopilot: send mode "stop" to /voice/autopilot.'
      case 'system_status':
        return `I can report the system status.${hint}`
      case 'time':
        return `I can tell you the time.${hint}`
      case 'chat':
        return `I can answer that in a chat.${hint}`
      default:
        return 'Sorry, I did not understand that command.'
    }
  }

  private async execute(plan: Plan): Promise<{ response: string; result?: unknown; success?: boolean }> {
    const { caller, verbosity } = plan
    switch (plan.intent) {
      case 'rag_search': {
        const collection = this.pickCollection(plan)
        if (!collection) return { response: 'You have no collections to search yet.', success: false }
        const query = searchTopic(plan.command, plan.collections)
        const found = await this.actions.search(caller.userId, collection, query, verbosity === 'high' ? 5 : 3)
        if (!found.results.length) return { response: `I found nothing about "${query}" in ${collection}.`, result: found }
        const top = found.results[0]!
        const count = `I found ${found.results.length} result${found.results.length === 1 ? '' : 's'} for "${query}" in ${collection}.`
        if (verbosity === 'low') return { response: count, result: found }
        const shown = verbosity === 'high' ? found.results : [top]
        return { response: `${count} ${shown.map((r) => `${r.id}: ${excerpt(r.content, verbosity === 'high' ? 300 : 160)}`).join(' ')}`, result: found }
      }
      case 'rag_answer': {
        const collection = this.pickCollection(plan)
        if (!collection || !this.actions.answer) return { response: 'You have no collections to answer from yet.', success: false }
        const answered = await this.actions.answer(caller.userId, collection, plan.command)
        const text = verbosity === 'low' ? excerpt(answered.answer, 200) : answered.answer
        return { response: text, result: answered }
      }
      case 'plugin_execute': {
        if (!this.actions.runTool) return { response: 'The plugin system is not available on this server.', success: false }
        if (plan.expression) {
          const result = (await this.actions.runTool(caller, 'calculator__evaluate', { expression: plan.expression })) as { value?: unknown }
          const value = typeof result === 'object' && result && 'value' in result ? result.value : result
          return { response: verbosity === 'low' ? `${value}` : `${spokenExpression(plan.expression)} is ${value}.`, result }
        }
        if (plan.plugin === 'text') {
          const subject = plan.command.replace(/^.*?\b(?:in|on|of)\b\s*/i, '')
          const result = (await this.actions.runTool(caller, 'text__stats', { text: subject })) as { words?: number; characters?: number }
          return { response: `That text has ${result.words} words and ${result.characters} characters.`, result }
        }
        if (plan.plugin === 'datetime') {
          const result = (await this.actions.runTool(caller, 'datetime__now', plan.timeZone ? { timezone: plan.timeZone } : {})) as { iso?: string }
          return { response: `The datetime plugin says ${result.iso}.`, result }
        }
        return { response: 'Tell me what to calculate, or which plugin to run.', success: false }
      }
      case 'agent_task': {
        if (!this.actions.startAgentTask) return { response: 'Multi-agent tasks are not available on this server.', success: false }
        const agents = plan.entities.filter((e) => e.startsWith('agent:')).map((e) => e.slice(6))
        const task = await this.actions.startAgentTask(caller, plan.command, agents)
        return { response: `I started agent task ${task.taskId}. Ask for its status at /agents/task/${task.taskId}.`, result: task }
      }
      case 'tts':
        return { response: speakable(plan.command) }
      case 'autopilot_start':
        await this.autopilot.start(caller.userId, undefined, {})
        return { response: 'The autopilot is on.' }
      case 'autopilot_stop':
        await this.autopilot.stop(caller.userId)
        return { response: 'The autopilot is off.' }
      case 'system_status': {
        const status = this.actions.systemStatus?.()
        if (!status) return { response: 'The server is running.' }
        const base = `The system is ${status.status}.`
        return { response: verbosity === 'low' ? base : `${base} Up for ${formatUptime(status.uptime)}, using ${status.memory} of memory.`, result: status }
      }
      case 'time': {
        const zone = plan.timeZone ?? Intl.DateTimeFormat().resolvedOptions().timeZone
        const now = new Date()
        const time = new Intl.DateTimeFormat('en-US', { timeZone: zone, hour: 'numeric', minute: '2-digit' }).format(now)
        const date = new Intl.DateTimeFormat('en-US', { timeZone: zone, weekday: 'long', month: 'long', day: 'numeric', year: 'numeric' }).format(now)
        const response = verbosity === 'low' ? `It is ${time}.` : `It is ${time} on ${date} (${zone}).`
        return { response, result: { iso: now.toISOString(), timezone: zone } }
      }
      case 'chat': {
        if (!this.actions.chat) return { response: 'Chat is not available.', success: false }
        const reply = await this.actions.chat(caller.userId, plan.context ? `${plan.context}\n\n${plan.command}` : plan.command)
        return { response: verbosity === 'low' ? excerpt(reply, 200) : reply }
      }
      default:
        return { response: 'Sorry, I did not understand that command.', success: false }
    }
  }
}

interface Plan {
  caller: Caller
  command: string
  intent: Intent
  entities: string[]
  collections: string[]
  expression: string | null
  plugin?: string
  verbosity: Verbosity
  timeZone: string | null
  context: string | null
}

function excerpt(text: string, max: number): string {
  const clean = text.replace(/\s+/g, ' ').trim()
  return clean.length <= max ? clean : `${clean.slice(0, max - 1).replace(/\s+\S*$/, '')}…`
}

/** What a "say …" command asks to have spoken. */
function speakable(command: string): string {
  const text = command
    .replace(/^\s*(?:please\s+|could you\s+)?(?:say|speak|read|pronounce|announce|narrate|repeat after me|voice|text to speech)\b(?:\s+(?:this|it|the following|the phrase|the words?|the text|the sentence|this message|this sentence|out loud|aloud|out|for me))*\s*:?\s*/i, '')
    .trim()
  return text || command.trim()
}

function spokenExpression(expression: string): string {
  return expression.replace(/\*/g, 'times').replace(/\//g, 'divided by').replace(/\+/g, 'plus').replace(/(?<=\s)-(?=\s)/g, 'minus').replace(/\^/g, 'to the power of')
}

function formatUptime(seconds: number): string {
  if (seconds < 60) return `${Math.round(seconds)} seconds`
  if (seconds < 3600) return `${Math.round(seconds / 60)} minutes`
  return `${Math.round(seconds / 360) / 10} hours`
}

