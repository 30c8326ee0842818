import type { Command } from 'commander'
import { ApiClient } from '../client'
import { emit, example, globals, keyValues } from '../output'

/**
 * Single sign-on from the command line: what the server offers, and device codes (approve from a
 * terminal that is signed in the code another machine's `uagent login --web` shows). The browser
 * steps of OpenID Connect (/auth/oidc/login, /auth/oidc/callback) have no command: they need a browser.
 */
export function registerSso(program: Command): void {
  const sso = program.command('sso').description('Single sign-on: providers, and approving device codes of uagent login --web')
  example(
    sso
      .command('providers')
      .description('How people sign in to the server: password form, OpenID Connect provider, LDAP')
      .action(async (_options, command: Command) => {
        const body = await new ApiClient({ ...globals(command), token: undefined }, { ...process.env, UAGENT_TOKEN: undefined }).json('GET', '/auth/providers')
        emit(command, body, () =>
          console.log(
            keyValues([
              ['password', body.password ? 'on' : 'off'],
              ['OpenID Connect', body.oidc ? `${body.oidc.name} (${body.oidc.loginUrl})` : 'not configured'],
              ['LDAP', body.ldap ? 'on' : 'not configured'],
            ]),
          ),
        )
      }),
    'uagent sso providers',
  )
  const device = sso.command('device').description('Device codes: sign in another machine\'s uagent as you')
  const show = (body: any) => console.log(keyValues([['code', body.userCode], ['status', body.status], ['asked by', body.clientName ?? '—'], ['asked at', body.createdAt], ['expires at', body.expiresAt]]))
  example(
    device
      .command('show <code>')
      .description('A code waiting for approval')
      .action(async (code: string, _options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('GET', `/auth/device/${encodeURIComponent(code)}`)
        emit(command, body, () => show(body))
      }),
    'uagent sso device show BKMT-QWXR',
  )
  for (const [name, summary] of [
    ['approve', 'Approve a code: the uagent polling it is signed in as you'],
    ['deny', 'Deny a code: the uagent polling it gets ACCESS_DENIED'],
  ] as const) {
    example(
      device
        .command(`${name} <code>`)
        .description(summary)
        .action(async (code: string, _options, command: Command) => {
          const body = await new ApiClient(globals(command)).json('POST', `/auth/device/${encodeURIComponent(code)}/${name}`)
          emit(command, body, () => console.log(body.message))
        }),
      `uagent sso device ${name} BKMT-QWXR`,
    )
  }
}
