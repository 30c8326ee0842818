export type { Conversation, ConversationStore, Message } from './store'

/** A title from the first message: its first line, cut at a word boundary. */
export function titleFrom(message: string): string {
  const line = message.trim().split('\n')[0]!.replace(/\s+/g, ' ')
  if (line.length <= 80) return line
  return `${line.slice(0, 80).replace(/\s+\S*$/, '')}…`
}
