import { STOPWORDS, words } from '../../../ml/text'

/**
 * The words of a question that say what is asked about, without the words that only frame it as a
 * question: "which command can print a sequence of numbers" asks about printing a sequence of
 * numbers, "how does WAL configuration work" about WAL configuration, "where can I read about
 * locale support" about locale support. The frame's function words ("how", "can", "the") weigh
 * nothing already; its other words ("command", "tool", "use", "work", "read", "tell") are in many
 * documents, so they move the query's vector towards any page that mentions commands or tools, and
 * find keyword candidates for nothing. Only a frame at the start (and "work" closing a "how does …
 * work" question) is taken off, and only when a content word is left: "tool" inside the question
 * stays, and "how does it work" is searched as it is.
 */
const SUBJECT = String.raw`(?:i|we|you|one|someone)`
const THING = String.raw`(?:command|tool|program|utility|application|app|option|setting|function|way)s?`
/** What a person asks for when they ask about something: "help with", "information on"… */
const ASKING = String.raw`(?:help|information|info|details|docs|documentation|pointers)`
const LEADING: RegExp[] = [
  // "please", "can you tell me about", "could you explain", "show me how to"
  /^(?:please|hi|hello)\b[\s,]*/i,
  new RegExp(String.raw`^(?:can|could|would|will) you\s+(?:please\s+)?(?:tell|show|explain|describe|give)(?: me)?(?:\s+(?:about|how to|how))?\b\s*`, 'i'),
  /^(?:tell|show|give) me(?:\s+(?:more|something|all))?(?:\s+(?:about|on|how to|how))?\b\s*/i,
  /^(?:explain|describe)(?:\s+(?:to me|how to|how))?\b\s*/i,
  // "how do I (use)", "how can we", "how does one"
  new RegExp(String.raw`^how (?:do|does|can|could|should|would|to)(?: ${SUBJECT})?(?: use| go about)?\b\s*`, 'i'),
  // "which command can", "what tool is there to", "what program do I use to", "is there a way to"
  new RegExp(String.raw`^(?:which|what)(?: kind of| sort of)? ${THING}(?: is there| are there)?(?: (?:can|could|should|do|does|will|would|is|are|lets|let))?(?: ${SUBJECT})?(?: use| be used| used)?(?: (?:to|for))?\b\s*`, 'i'),
  new RegExp(String.raw`^(?:is|are) there (?:a|an|any|some)? ?${THING}(?: (?:to|for|that))?\b\s*`, 'i'),
  // "where can I read about", "where do I find", "where is … described"
  new RegExp(String.raw`^where (?:can|could|do|does|should|would) ${SUBJECT} (?:read|learn|find out|find information|look|get information)(?: more)?(?: (?:about|on|for))?\b\s*`, 'i'),
  // "I want to", "I need to", "I'd like to"
  new RegExp(String.raw`^${SUBJECT} (?:want|need|would like|'d like|wish) to\b\s*`, 'i'),
  // "I need help with", "we'd like some information on", "help me with", "I have a question about", "I'm looking for docs on"
  new RegExp(String.raw`^${SUBJECT} (?:need|want|would like|'d like) (?:some |more )?${ASKING}(?: (?:with|on|about|for|regarding))?\b\s*`, 'i'),
  /^help (?:me(?: (?:with|on|understand))?|with|on)\b\s*/i,
  new RegExp(String.raw`^${SUBJECT} (?:have|got) (?:a |some )?questions? (?:about|on|regarding)\b\s*`, 'i'),
  new RegExp(String.raw`^(?:i'm|i am|we're|we are) looking for(?: (?:some |more )?${ASKING})?(?: (?:about|on|for|regarding))?\b\s*`, 'i'),
  new RegExp(String.raw`^(?:any |some |more )?${ASKING} (?:about|on|for|regarding)\b\s*`, 'i'),
  /^what (?:does|do) (?:the )?(?:documentation|docs|manual|manuals) say (?:about|on)\b\s*/i,
]

/** "how does X work" / "how do X work": the closing "work" is part of the frame. */
const CLOSING_WORK = /^how (?:does|do|did|can|could|would)\b(.+?)\s+work\s*[?.!]*\s*$/i
/** "where is X documented" / "where are X described": "where is" and the closing word are the frame. */
const CLOSING_DOCUMENTED = /^where (?:is|are)\b(.+?)\s+(?:documented|described|explained|covered)\s*[?.!]*\s*$/i

const hasContent = (text: string) => words(text).some((word) => !STOPWORDS.has(word))

export function questionFocus(question: string): string {
  let text = question.trim()
  const closing = CLOSING_WORK.exec(text)
  if (closing && hasContent(closing[1]!)) text = `how does ${closing[1]!.trim()}`
  const documented = CLOSING_DOCUMENTED.exec(text)
  if (documented && hasContent(documented[1]!)) text = documented[1]!.trim()
  for (let changed = true; changed; ) {
    changed = false
    for (const frame of LEADING) {
      const rest = text.replace(frame, '')
      if (rest !== text && hasContent(rest)) {
        text = rest
        changed = true
      }
    }
  }
  return text === question.trim() ? question : text
}
