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
