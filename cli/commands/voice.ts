import { readFileSync, writeFileSync } from 'node:fs'
import { extname } from 'node:path'
import { type Command, Option } from 'commander'
import { ApiClient, CliError, EXIT } from '../client'
import { bold, dim, emit, example, globals, keyValues, table } from '../output'
import { decimal } from '../parse'

const FORMATS = ['mp3', 'wav', 'ogg']

function readAudio(path: string): string {
  try {
    return readFileSync(path).toString('base64')
  } catch (error) {
    throw new CliError('USAGE', `cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, EXIT.usage)
  }
}

interface TtsOptions {
  output?: string
  voice: string
  language: string
  speed: number
  format?: string
}

interface AutopilotOptions {
  autoExecute?: boolean
  verbosity?: string
  voice?: string
  speed?: number
  timezone?: string
  context?: string
}

export function registerVoice(program: Command): void {
  const voice = program.command('voice').description('Speech synthesis, speech recognition, voice commands and the autopilot')
  example(
    voice
      .command('tts <text...>')
      .description('Synthesize speech; -o saves the audio (format from the file extension unless --format)')
      .option('-o, --output <file>', 'save the audio here')
      .option('--voice <id>', 'a voice from `uagent voice voices`, optionally +variant', 'default')
      .option('--language <tag>', 'language of the default voice', 'en-US')
      .option('--speed <n>', 'speaking rate, 0.25 to 4', decimal, 1)
      .addOption(new Option('--format <format>', 'audio format').choices(FORMATS))
      .action(async (words: string[], options: TtsOptions, command: Command) => {
        const fromExtension = options.output ? extname(options.output).slice(1).toLowerCase() : ''
        const format = options.format ?? (FORMATS.includes(fromExtension) ? fromExtension : 'mp3')
        if (options.output && !options.format && !FORMATS.includes(fromExtension)) {
          throw new CliError('USAGE', `cannot tell the format from "${options.output}": name it .mp3, .wav or .ogg, or give --format`, EXIT.usage)
        }
        const client = new ApiClient(globals(command))
        const body = await client.json('POST', '/voice/tts', { text: words.join(' '), voice: options.voice, language: options.language, speed: options.speed, format })
        if (options.output) {
          const audio = await client.fetch(body.audioUrl)
          writeFileSync(options.output, new Uint8Array(await audio.arrayBuffer()))
        }
        emit(command, body, () => {
          console.log(options.output ? `Saved ${body.size} bytes of ${body.format} (${body.duration.toFixed(2)} s) to ${options.output}.` : `${body.audioUrl}`)
          if (!options.output) console.error(dim(`${body.format}, ${body.size} bytes, ${body.duration.toFixed(2)} s`))
        })
      }),
    'uagent voice tts "The build passed" -o out.mp3',
    'uagent voice tts "Bonjour" --voice fr --speed 1.2 -o bonjour.wav',
  )
  example(
    voice
      .command('voices')
      .description('List the voices and their languages')
      .action(async (_options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('GET', '/voice/voices')
        emit(command, body, () => console.log(table(['ID', 'LANGUAGE', 'NAME'], body.voices.map((v: any) => [v.id, v.language, v.name]))))
      }),
    'uagent voice voices',
  )
  example(
    voice
      .command('transcribe <file>')
      .description('Speech to text on the server (WAV, MP3 or Ogg)')
      .addOption(new Option('--mode <mode>', 'commands (grammar of known commands) or dictation (general English)').choices(['commands', 'dictation']).default('commands'))
      .action(async (file: string, options: { mode: string }, command: Command) => {
        const body = await new ApiClient(globals(command)).json('POST', '/voice/transcribe', { audio: readAudio(file), mode: options.mode })
        emit(command, body, () => {
          console.log(body.text)
          console.error(dim(`[${body.mode} · confidence ${body.confidence.toFixed(2)} · ${body.duration.toFixed(2)} s]`))
        })
      }),
    'uagent voice transcribe command.wav',
    'uagent voice transcribe memo.ogg --mode dictation',
  )
  example(
    voice
      .command('command [text...]')
      .description('Send a voice command as text, or as audio with --audio')
      .option('--audio <file>', 'a recording of the command (WAV, MP3 or Ogg)')
      .option('--context <text>', 'extra context')
      .action(async (words: string[], options: { audio?: string; context?: string }, command: Command) => {
        if (!words.length && !options.audio) throw new CliError('USAGE', 'give the command as text, or --audio FILE', EXIT.usage)
        if (words.length && options.audio) throw new CliError('USAGE', 'give either text or --audio, not both', EXIT.usage)
        const body = await new ApiClient(globals(command)).json('POST', '/voice/command', {
          ...(options.audio ? { audio: readAudio(options.audio) } : { command: words.join(' ') }),
          ...(options.context ? { context: options.context } : {}),
        })
        emit(command, body, () => {
          if (body.transcript) console.log(`${dim('heard')}    ${body.transcript.text}`)
          console.log(keyValues([['intent', body.intent], ['action', body.action], ['entities', body.entities.join(', ') || '-'], ['executed', body.executed ? 'yes' : 'no']]))
          console.log(`\n${bold(body.response)}`)
          console.error(dim(`audio: ${body.audioResponse}`))
        })
      }),
    'uagent voice command "search my documents for backups"',
    'uagent voice command --audio question.wav',
  )
  example(
    voice
      .command('autopilot <mode>')
      .description('Start, stop or show your autopilot (start|stop|status)')
      .option('--auto-execute', 'carry commands out instead of proposing them')
      .addOption(new Option('--verbosity <level>', 'how long replies are').choices(['low', 'medium', 'high']))
      .option('--voice <id>', 'voice of the spoken replies')
      .option('--speed <n>', 'speed of the spoken replies', decimal)
      .option('--timezone <zone>', 'IANA time zone for "what time is it"')
      .option('--context <text>', 'context kept with the session')
      .action(async (mode: string, options: AutopilotOptions, command: Command) => {
        if (!['start', 'stop', 'status'].includes(mode)) throw new CliError('USAGE', `mode must be start, stop or status, got "${mode}"`, EXIT.usage)
        const preferences: Record<string, unknown> = {}
        if (options.autoExecute !== undefined) preferences.autoExecute = options.autoExecute
        if (options.verbosity) preferences.verbosity = options.verbosity
        if (options.voice) preferences.voice = options.voice
        if (options.speed !== undefined) preferences.speed = options.speed
        if (options.timezone) preferences.timezone = options.timezone
        const body = await new ApiClient(globals(command)).json('POST', '/voice/autopilot', {
          mode,
          ...(Object.keys(preferences).length ? { preferences } : {}),
          ...(options.context ? { context: options.context } : {}),
        })
        emit(command, body, () => {
          const pairs: [string, unknown][] = [['status', body.status], ['session', body.sessionId || '-']]
          if (body.preferences) pairs.push(['auto-execute', body.preferences.autoExecute ? 'yes' : 'no'], ['verbosity', body.preferences.verbosity])
          pairs.push(['capabilities', body.capabilities.join(', ')])
          console.log(keyValues(pairs))
        })
      }),
    'uagent voice autopilot start --auto-execute',
    'uagent voice autopilot status',
  )
}
