// A real OpenID Connect provider for the single sign-on tests: panva's oidc-provider (certified),
// run under Node. Its development sign-in form accepts any login (the account id) and password.
// Input (env OIDC_FIXTURE, JSON): { clients: [{ client_id, client_secret, redirect_uris }], accountsFile, groupsScope? }:
// the accounts file ({ <id>: claims }) is read at each sign-in, so a test can change someone's groups. With
// groupsScope the groups claim is released only for a `groups` scope (as Dex and Okta do), else with `profile`.
// Prints "READY <issuer>" once listening on a free port of 127.0.0.1; stops on SIGTERM.
import { createServer } from 'node:http'
import { readFileSync } from 'node:fs'
import Provider from 'oidc-provider'

const fixture = JSON.parse(process.env.OIDC_FIXTURE)
const server = createServer()
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
const issuer = `http://127.0.0.1:${server.address().port}`

const provider = new Provider(issuer, {
  clients: fixture.clients.map((client) => ({ grant_types: ['authorization_code'], response_types: ['code'], token_endpoint_auth_method: 'client_secret_post', ...client })),
  pkce: { required: () => true },
  claims: fixture.groupsScope
    ? { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'], groups: ['groups'] }
    : { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
  features: { devInteractions: { enabled: true } },
  ttl: { Interaction: 600, Session: 600, Grant: 600, AccessToken: 600, IdToken: Number(process.env.OIDC_ID_TOKEN_TTL ?? 600), AuthorizationCode: 60 },
  async findAccount(_ctx, id) {
    const claims = JSON.parse(readFileSync(fixture.accountsFile, 'utf8'))[id]
    if (!claims) return undefined
    return { accountId: id, claims: async () => ({ sub: id, ...claims }) }
  },
  // Consent is given: the tests sign in, they do not test the provider's consent screen.
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId)
    if (grantId) return ctx.oidc.provider.Grant.find(grantId)
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId })
    // What the client asked for (of the scopes this provider knows) is granted.
    grant.addOIDCScope([...ctx.oidc.requestParamScopes].join(' '))
    await grant.save()
    return grant
  },
})
provider.on('server_error', (_ctx, error) => console.error('oidc-provider server_error', error))
server.on('request', provider.callback())
process.on('SIGTERM', () => server.close(() => process.exit(0)))
console.log(`READY ${issuer}`)
