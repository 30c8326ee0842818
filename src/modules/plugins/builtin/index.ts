import { AppError } from '../../../core/errors'
import type { RagService } from '../../rag/service'
import type { RagStore } from '../../rag/store'
import type { ActionSpec } from '../manifest'
import { CALCULATOR_CONSTANTS, CALCULATOR_FUNCTIONS, CalculatorError, evaluateExpression, MAX_EXPRESSION_LENGTH } from './calculator'
import { convert, difference, now } from './datetime'
import { slugify, stats, summarize } from './text'

export interface BuiltinCaller {
  userId: string
  signal?: AbortSignal
}

/** A plugin that ships with the server and runs in its process (it is the server's own code). */
export interface BuiltinPlugin {
  name: string
  version: string
  description: string
  category: string
  permissions: string[]
  actions: Record<string, ActionSpec & { run: (params: any, caller: BuiltinCaller) => unknown }>
}

const MAX_TEXT = 1_000_000
const textParam = { type: 'string', maxLength: MAX_TEXT, description: 'The text (at most 1,000,000 characters)' }
const zone = (description: string) => ({ type: 'string', minLength: 1, maxLength: 100, description })
const dateTime = (description: string) => ({ type: 'string', minLength: 1, maxLength: 64, description })

function calculator(): BuiltinPlugin {
  return {
    name: 'calculator',
    version: '1.0.0',
    description: 'Evaluates arithmetic expressions: + - * / % ^, parentheses, unary minus, !, functions and constants',
    category: 'utility',
    permissions: [],
    actions: {
      evaluate: {
        description:
          `Evaluate an arithmetic expression such as "2 * (3 + 4) ^ 2" or "round(sqrt(2), 3)". ` +
          `Functions: ${CALCULATOR_FUNCTIONS.join(', ')}. Constants: ${CALCULATOR_CONSTANTS.join(', ')}.`,
        parameters: {
          type: 'object',
          properties: { expression: { type: 'string', minLength: 1, maxLength: MAX_EXPRESSION_LENGTH, description: 'The expression' } },
          required: ['expression'],
          additionalProperties: false,
        },
        readOnly: true,
        run: ({ expression }: { expression: string }) => {
          try {
            return { value: evaluateExpression(expression) }
          } catch (error) {
            if (error instanceof CalculatorError) throw new AppError('PLUGIN_ERROR', error.message)
            throw error
          }
        },
      },
    },
  }
}

function datetime(): BuiltinPlugin {
  return {
    name: 'datetime',
    version: '1.0.0',
    description: 'Current time in any IANA time zone, time zone conversion and differences between dates',
    category: 'utility',
    permissions: [],
    actions: {
      now: {
        description: 'The current date and time in a time zone (default UTC): { iso, timezone, offset, utc, unix, weekday }',
        parameters: { type: 'object', properties: { timezone: zone('IANA time zone, e.g. "Europe/Paris"') }, additionalProperties: false },
        readOnly: true,
        run: now,
      },
      difference: {
        description: 'Time from one ISO 8601 date or date-time to another, in milliseconds … weeks and as calendar years, months, days',
        parameters: {
          type: 'object',
          properties: {
            from: dateTime('Start, e.g. "2024-01-31" or "2024-01-31T08:00:00+01:00"'),
            to: dateTime('End'),
            timezone: zone('IANA zone for date-times written without an offset (default UTC)'),
          },
          required: ['from', 'to'],
          additionalProperties: false,
        },
        readOnly: true,
        run: difference,
      },
      convert: {
        description: 'A date-time shown in another time zone: { iso, timezone, offset, utc, unix, weekday }',
        parameters: {
          type: 'object',
          properties: {
            datetime: dateTime('ISO 8601 date-time, e.g. "2024-05-01T09:30:00Z"'),
            timezone: zone('IANA zone to show it in'),
            from: zone('IANA zone of a date-time written without an offset (default UTC)'),
          },
          required: ['datetime', 'timezone'],
          additionalProperties: false,
        },
        readOnly: true,
        run: convert,
      },
    },
  }
}

function text(): BuiltinPlugin {
  return {
    name: 'text',
    version: '1.0.0',
    description: 'Text statistics, URL slugs and extractive summaries',
    category: 'text',
    permissions: [],
    actions: {
      stats: {
        description: 'Count characters, words, sentences, paragraphs and lines; estimated reading time',
        parameters: { type: 'object', properties: { text: textParam }, required: ['text'], additionalProperties: false },
        readOnly: true,
        run: stats,
      },
      slugify: {
        description: 'A lowercase ASCII slug for URLs or file names: "Crème Brûlée!" → "creme-brulee"',
        parameters: {
          type: 'object',
          properties: {
            text: { ...textParam, maxLength: 10_000 },
            separator: { type: 'string', enum: ['-', '_', '.', ''], default: '-' },
            maxLength: { type: 'integer', minimum: 1, maximum: 1000, default: 80 },
          },
          required: ['text'],
          additionalProperties: false,
        },
        readOnly: true,
        run: slugify,
      },
      summarize: {
        description: 'Extractive summary: the most representative sentences of the text, in their original order',
        parameters: {
          type: 'object',
          properties: { text: textParam, sentences: { type: 'integer', minimum: 1, maximum: 50, default: 3 } },
          required: ['text'],
          additionalProperties: false,
        },
        readOnly: true,
        run: summarize,
      },
    },
  }
}

function knowledge(rag: RagService<RagStore>): BuiltinPlugin {
  return {
    name: 'knowledge',
    version: '1.0.0',
    description: "Searches the caller's RAG collections, their own and those shared with them (hybrid vector + keyword search)",
    category: 'knowledge',
    permissions: ['rag:read'],
    actions: {
      search: {
        description: "Search a collection you can read; results carry id, content, score (0..1) and metadata",
        parameters: {
          type: 'object',
          properties: {
            collection: { type: 'string', minLength: 1, maxLength: 400, description: 'Your collection by name, or one shared with you by name, id or <owner email>/<name>' },
            query: { type: 'string', minLength: 1, maxLength: 10_000, pattern: '\\S', description: 'What to look for' },
            limit: { type: 'integer', minimum: 1, maximum: 100, default: 5 },
          },
          required: ['collection', 'query'],
          additionalProperties: false,
        },
        readOnly: true,
        run: async ({ collection, query, limit }: { collection: string; query: string; limit: number }, caller) => {
          const { results } = await rag.search(caller.userId, collection, query, limit)
          return { results }
        },
      },
    },
  }
}

/** The plugins that ship with the server, by name. */
export function builtinPlugins(rag: RagService<RagStore>): Map<string, BuiltinPlugin> {
  return new Map([calculator(), datetime(), text(), knowledge(rag)].map((plugin) => [plugin.name, plugin]))
}
