import { expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../src/config'

const problem = (env: Record<string, string>) => {
  try {
    loadConfig(env)
    return null
  } catch (error) {
    return error instanceof ConfigError ? error.message : String(error)
  }
}

test('single sign-on variables: defaults, and incomplete providers named at start', () => {
  const config = loadConfig({})
  expect([config.localLogin, config.oidcGroupsClaim, config.ldapUserFilter, config.oidcAdminGroups]).toEqual([true, 'groups', '(mail={email})', []])
  // Issuers are kept exactly (Authentik's ends with a slash).
  expect(loadConfig({ UAGENT_OIDC_ISSUER: 'https://a.example/application/o/x/', UAGENT_OIDC_CLIENT_ID: 'c' }).oidcIssuer).toBe('https://a.example/application/o/x/')
  expect(loadConfig({ UAGENT_OIDC_ADMIN_GROUPS: 'ops, admins ,' }).oidcAdminGroups).toEqual(['ops', 'admins'])
  expect(problem({ UAGENT_OIDC_ISSUER: 'https://idp.example' })).toStartWith('UAGENT_OIDC_CLIENT_ID')
  expect(problem({ UAGENT_OIDC_CLIENT_ID: 'c' })).toStartWith('UAGENT_OIDC_ISSUER')
  expect(problem({ UAGENT_OIDC_ISSUER: 'not a url', UAGENT_OIDC_CLIENT_ID: 'c' })).toStartWith('UAGENT_OIDC_ISSUER')
  expect(problem({ UAGENT_LDAP_URL: 'http://ldap.example' })).toStartWith('UAGENT_LDAP_URL')
  expect(problem({ UAGENT_LDAP_URL: 'ldap://ldap.example' })).toStartWith('UAGENT_LDAP_USER_BASE')
  expect(problem({ UAGENT_LDAP_URL: 'ldaps://ldap.example', UAGENT_LDAP_USER_BASE: 'dc=x', UAGENT_LDAP_USER_FILTER: '(uid=admin)' })).toStartWith('UAGENT_LDAP_USER_FILTER')
  expect(problem({ UAGENT_LDAP_URL: 'ldaps://ldap.example', UAGENT_LDAP_USER_BASE: 'dc=x', UAGENT_LDAP_BIND_DN: 'cn=svc' })).toStartWith('UAGENT_LDAP_BIND_PASSWORD')
  expect(problem({ UAGENT_LOCAL_LOGIN: 'off' })).toStartWith('UAGENT_LOCAL_LOGIN')
  expect(problem({ UAGENT_LOCAL_LOGIN: 'off', UAGENT_LDAP_URL: 'ldap://l', UAGENT_LDAP_USER_BASE: 'dc=x' })).toBeNull()
  expect(problem({ UAGENT_PUBLIC_URL: 'agent.example.com' })).toStartWith('UAGENT_PUBLIC_URL')
})

test('UAGENT_OIDC_SCOPES: unset asks discovery; space- or comma-separated, openid required, no quotes', () => {
  expect(loadConfig({}).oidcScopes).toBeNull()
  expect(loadConfig({ UAGENT_OIDC_SCOPES: 'openid email,profile  groups,groups' }).oidcScopes).toEqual(['openid', 'email', 'profile', 'groups'])
  expect(problem({ UAGENT_OIDC_SCOPES: 'email groups' })).toStartWith('UAGENT_OIDC_SCOPES: must include openid')
  expect(problem({ UAGENT_OIDC_SCOPES: 'openid "groups"' })).toStartWith('UAGENT_OIDC_SCOPES')
})
