import { t } from 'elysia'
import { nonBlankText } from '../../core/schema'

export const CreateGroupRequest = t.Object({
  name: nonBlankText(64, { description: 'Unique, 1..64 characters', error: 'body.name: must be 1 to 64 characters, not only spaces' }),
  description: t.Optional(t.String({ maxLength: 500, error: 'body.description: at most 500 characters' })),
})

export const UpdateGroupRequest = t.Object({
  name: t.Optional(nonBlankText(64, { error: 'body.name: must be 1 to 64 characters, not only spaces' })),
  description: t.Optional(t.String({ maxLength: 500, error: 'body.description: at most 500 characters' })),
})

export const AddMemberRequest = t.Object({
  userId: t.Optional(t.String({ minLength: 1, maxLength: 100, error: 'body.userId: a user id' })),
  email: t.Optional(t.String({ minLength: 3, maxLength: 320, error: 'body.email: an email address' })),
})

export const GroupParams = t.Object({ id: t.String({ minLength: 1, maxLength: 100 }) })
export const MemberParams = t.Object({ id: t.String({ minLength: 1, maxLength: 100 }), userId: t.String({ minLength: 1, maxLength: 100 }) })

const Source = t.Union([t.Literal('local'), t.Literal('oidc'), t.Literal('ldap')], { description: 'local: managed here; oidc / ldap: kept in step with single sign-on' })

const groupFields = {
  id: t.String(),
  name: t.String(),
  description: t.String(),
  source: Source,
  externalId: t.Nullable(t.String({ description: "The provider's group name or DN; null for a local group" })),
  createdAt: t.String({ format: 'date-time' }),
  updatedAt: t.String({ format: 'date-time' }),
}

export const Group = t.Object({ ...groupFields, members: t.Integer({ description: 'How many members it has' }) })

export const GroupDetail = t.Object({
  ...groupFields,
  members: t.Array(t.Object({ id: t.String(), email: t.String(), addedAt: t.String({ format: 'date-time' }) }), { description: 'By email' }),
  memberCount: t.Integer(),
})

export const GroupsResponse = t.Object({ groups: t.Array(Group, { description: 'By name' }), total: t.Integer() })

export const DeletedGroup = t.Object({ success: t.Boolean(), id: t.String() })
