import { andThen, type MaybePromise } from '../../db/maybe-promise'
import { type AutopilotPreferences, type AutopilotSession, DEFAULT_PREFERENCES, startedSession, type Verbosity, type VoiceStore } from './store'

export { DEFAULT_PREFERENCES }
export type { AutopilotPreferences, AutopilotSession, Verbosity }

/** One autopilot session per user, kept in the voice store. */
export class AutopilotStore {
  constructor(private readonly store: VoiceStore) {}

  get(userId: string): MaybePromise<AutopilotSession | null> {
    return this.store.autopilot(userId)
  }

  /** Starts (or keeps) the user's session, with the preferences given merged over the stored ones. */
  start(userId: string, context: string | null | undefined, preferences: Partial<AutopilotPreferences>): MaybePromise<AutopilotSession> {
    return andThen(this.store.autopilot(userId), (current) =>
      andThen(this.store.saveAutopilot(userId, startedSession(current, context, preferences), new Date().toISOString()), () =>
        andThen(this.store.autopilot(userId), (session) => session!),
      ),
    )
  }

  stop(userId: string): MaybePromise<AutopilotSession | null> {
    return andThen(this.store.stopAutopilot(userId, new Date().toISOString()), () => this.store.autopilot(userId))
  }
}
