/**
 * Collections the server keeps for itself: a conversation's attached files live in one collection
 * per conversation, `__conversation-<conversation id>`, owned by the conversation's owner
 * (src/modules/conversations/files.ts). They are left out of the collection listings, and no one
 * may make a collection of such a name.
 */
export const CONVERSATION_FILES_PREFIX = '__conversation-'

export function isConversationFiles(name: string): boolean {
  return name.startsWith(CONVERSATION_FILES_PREFIX)
}
