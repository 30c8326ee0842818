import { afterAll, beforeAll, describe } from 'bun:test'
import type { AppOptions } from '../../../src/app'
import type { ChatMessage, GenerateOptions, Generator } from '../../../src/ml'
import { ChatService } from '../../../src/modules/chat/service'
import { makeServer } from '../../helpers'
import { freshPostgres, POSTGRES_SKIPPED, TEST_DATABASE_URL } from '../../postgres'
import type { Postgres } from '../../../src/db/postgres'

/** A generator whose every reply is numbered (`reply 1`, `reply 2`…) and that keeps the prompts it saw. */
export class NumberedReplies implements Generator {
  readonly id = 'test/numbered'
  contextLength = 4096
  calls = 0
  prompts: ChatMessage[][] = []

  async countTokens(text: string) {
    return text.split(/\s+/).filter(Boolean).length
  }

  async generate(messages: ChatMessage[], options: GenerateOptions = {}, signal?: AbortSignal) {
    let text = ''
    for await (const piece of this.stream(messages, options, signal)) text += piece
    return { text, promptTokens: 1, completionTokens: 2, finishReason: 'stop' as const }
  }

  async *stream(messages: ChatMessage[], _options?: GenerateOptions, _signal?: AbortSignal) {
    this.prompts.push(messages)
    const n = ++this.calls
    yield 'reply'
    yield ` ${n}`
  }
}

export type TestServer = ReturnType<typeof makeServer>

/** A server of one backend, answering with `generator` when given. */
export type MakeServer = (options?: AppOptions, generator?: Generator) => TestServer

/**
 * Runs `body` against an in-memory SQLite server and, when UAGENT_TEST_DATABASE_URL is set, one on
 * a fresh PostgreSQL database (skipped otherwise, saying why). `make` builds a server of the backend.
 */
export function onBothBackends(title: string, body: (make: MakeServer) => void): void {
  describe(`${title} (SQLite)`, () => body(build(undefined)))
  onPostgres(title, body)
}

/** Runs `body` against a server on a fresh PostgreSQL database (UAGENT_TEST_DATABASE_URL; skipped otherwise, saying why). */
export function onPostgres(title: string, body: (make: MakeServer) => void): void {
  if (!TEST_DATABASE_URL) {
    describe.skip(`${title} (PostgreSQL: ${POSTGRES_SKIPPED})`, () => body(() => {
      throw new Error(POSTGRES_SKIPPED)
    }))
    return
  }
  describe(`${title} (PostgreSQL)`, () => {
    let postgres: Postgres | undefined
    beforeAll(async () => {
      postgres = await freshPostgres()
    })
    afterAll(async () => {
      await postgres?.close()
    })
    body((options, generator) => build(postgres!)(options, generator))
  })
}

/** `make` of a backend: a server on it, answering with `generator` when given. */
const build = (postgres: Postgres | undefined) => (options: AppOptions = {}, generator?: Generator) =>
  makeServer({ ...(postgres ? { postgres } : {}), ...options }, (services) => {
    if (!generator) return
    services.chat = new ChatService({ conversations: services.conversations, generator: async () => generator, userExists: async (id) => (await services.auth.getUser(id)) !== null })
  })
