import { expect, test } from 'bun:test'
import { escapeFilterValue, firstRdnValue } from '../../src/modules/sso/ldap'

test('filter values escape *, (, ), \\ and NUL (RFC 4515); the rest is kept', () => {
  expect(escapeFilterValue('a*b(c)d\\e\0f')).toBe('a\\2ab\\28c\\29d\\5ce\\00f')
  expect(escapeFilterValue('alice@example.com')).toBe('alice@example.com')
  expect(escapeFilterValue('Zoë')).toBe('Zoë')
})

test('a group DN gives its name (the first RDN, unescaped)', () => {
  expect(firstRdnValue('cn=Ops\\2C Team,ou=groups,dc=example,dc=com')).toBe('Ops, Team')
  expect(firstRdnValue('cn=engineers,ou=groups,dc=example,dc=com')).toBe('engineers')
  expect(firstRdnValue('CN=Domain Users,CN=Users,DC=corp,DC=example')).toBe('Domain Users')
})
