// How answers are scored against test/fixtures/answers-labelled.json, by its test and by `bun run bench answers`.

const squash = (text: string) => text.replace(/\s+/g, ' ').trim()
const LEANS_BACK = /^(it|its|this|that|these|those|they|their|them|such|he|she|then|there|however|but|also|so|thus|therefore|otherwise|instead)\b/i

/** The answer's first sentence as cited ("… [1]"), with the next one when it leans on the first. */
export function firstAnswerSentence(answer: string): string {
  const units = answer.split(/\s*\[\d+\]\s*/).map(squash).filter(Boolean)
  if (units.length > 1 && LEANS_BACK.test(units[1]!)) return `${units[0]} ${units[1]}`
  return units[0] ?? ''
}

/** Whether the answer's first sentence is the labelled one (`answer`: a distinctive piece of it). */
export function answersWith(answer: string, labelled: string): boolean {
  return firstAnswerSentence(answer).includes(squash(labelled))
}

/** The documents the paraphrase set (test/fixtures/paraphrase-labelled.json) is asked of: paragraphs of four labelled documents, one document each. */
export function paragraphDocuments(documents: { id: string; content: string }[]): { id: string; content: string }[] {
  const out: { id: string; content: string }[] = []
  for (const d of documents) {
    if (!['users-and-groups', 'openssh-README.Debian', 'adduser.conf.5', 'gzip.1'].includes(d.id)) continue
    d.content
      .split(/\n\s*\n/)
      .map((p) => p.trim())
      .filter((p) => p.length >= 120)
      .forEach((content, i) => out.push({ id: `${d.id}#${i}`, content }))
  }
  return out
}

/** Every paragraph (120 characters or more) of every document, one document each: what test/fixtures/paraphrase-natural.json is asked of. */
export function allParagraphs(documents: { id: string; content: string }[]): { id: string; content: string }[] {
  return documents.flatMap((d) =>
    d.content
      .split(/\n\s*\n/)
      .map((p) => p.trim())
      .filter((p) => p.length >= 120)
      .map((content, i) => ({ id: `${d.id}#${i}`, content })),
  )
}
