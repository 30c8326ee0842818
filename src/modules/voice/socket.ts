import { AppError } from '../../core/errors'
import type { SocketHandlers } from '../ws/registry'
import type { VoiceCommands } from './commands'
import { base64Audio } from './index'

/** `voice_command {command | audio (base64), context?, mode?}` → `chat_response {data: VoiceCommandResponse}`. */
export function registerVoiceSocket(handlers: SocketHandlers, commands: VoiceCommands): void {
  handlers.register('voice_command', async ({ principal }, message) => {
    const { command, audio, context, mode } = message
    if (audio !== undefined) {
      if (typeof audio !== 'string' || !audio) throw new AppError('VALIDATION_ERROR', 'audio must be a base64 string')
    } else if (typeof command !== 'string' || !/\S/.test(command) || command.length > 2000) {
      throw new AppError('VALIDATION_ERROR', 'command must be a string of 1..2000 characters, not blank (or send audio, base64)')
    }
    if (context !== undefined && context !== null && (typeof context !== 'string' || context.length > 10_000)) {
      throw new AppError('VALIDATION_ERROR', 'context must be a string of at most 10000 characters')
    }
    if (mode !== undefined && mode !== 'commands' && mode !== 'dictation') throw new AppError('VALIDATION_ERROR', 'mode must be commands or dictation')
    return commands.handle(
      { userId: principal.user.id, roles: principal.user.roles },
      {
        command: audio === undefined ? (command as string) : undefined,
        audio: audio === undefined ? undefined : base64Audio(audio as string),
        mode: mode as 'commands' | 'dictation' | undefined,
        context: (context as string | null | undefined) ?? null,
      },
    )
  })
}
