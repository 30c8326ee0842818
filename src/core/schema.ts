import { t } from 'elysia'

type StringOptions = NonNullable<Parameters<typeof t.String>[0]>

/** The pattern of text that must hold at least one character that is not white space. */
export const NOT_BLANK = '\\S'

/**
 * A text field that must say something: 1..`maxLength` characters, not all white space.
 * (A message, query or question of spaces only would be stored or searched as if it meant something.)
 */
export function nonBlankText(maxLength: number, options: StringOptions = {}) {
  return t.String({ ...options, minLength: 1, maxLength, pattern: NOT_BLANK })
}
