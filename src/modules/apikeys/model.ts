import { t } from 'elysia'
import { nonBlankText } from '../../core/schema'
import { MAX_EXPIRES_IN } from './service'

export const CreateApiKeyRequest = t.Object({
  name: nonBlankText(100, { description: 'What the key is for, e.g. "laptop: Continue"' }),
  expiresIn: t.Optional(
    t.Union(
      [
        t.Integer({ minimum: 1, maximum: MAX_EXPIRES_IN, description: 'Lifetime in seconds' }),
        t.String({ pattern: '^\\s*\\d{1,10}\\s*[smhdwySMHDWY]?\\s*$', maxLength: 20, description: 'A duration: "90d", "12h", "30m", "45s"' }),
        t.Null(),
      ],
      { error: `body.expiresIn: must be seconds from 1 to ${MAX_EXPIRES_IN}, or a duration like "90d", "12h", "30m"`, description: 'Without it the key does not expire' },
    ),
  ),
})

const keyFields = {
  id: t.String(),
  name: t.String(),
  prefix: t.String({ description: 'The first characters of the key, to tell keys apart' }),
  createdAt: t.String({ format: 'date-time' }),
  lastUsedAt: t.Nullable(t.String({ format: 'date-time', description: 'Updated at most once a minute' })),
  expiresAt: t.Nullable(t.String({ format: 'date-time' })),
}

export const ApiKey = t.Object(keyFields)

export const CreatedApiKey = t.Object({
  ...keyFields,
  key: t.String({ description: 'The secret (uak_…), shown this once: it is stored hashed and cannot be shown again' }),
})

export const ApiKeysResponse = t.Object({ keys: t.Array(ApiKey), total: t.Integer() })

export const ApiKeyParams = t.Object({ id: t.String({ minLength: 1, maxLength: 64 }) })

export const RevokedApiKey = t.Object({ success: t.Boolean(), id: t.String() })
