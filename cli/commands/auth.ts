import type { Command } from 'commander'
import { ApiClient, CliError, EXIT } from '../client'
import { credentialsPath, removeCredentials, saveCredentials } from '../credentials'
import { ask } from '../prompt'
import { emit, example, globals, keyValues } from '../output'

export function registerAuth(program: Command): void {
  example(
    program
      .command('login')
      .description('Log in and store the tokens (refreshed automatically when they expire)')
      .option('--email <email>', 'account email (asked for when omitted on a terminal)')
      .option('--password <password>', 'password (asked for without echo when omitted on a terminal)')
      .option('--mfa-code <code>', 'current 6-digit code when MFA is enabled')
      .action(async (options: { email?: string; password?: string; mfaCode?: string }, command: Command) => {
        const email = options.email ?? (await ask('Email: '))
        const password = options.password ?? (await ask('Password: ', true))
        const client = new ApiClient({ ...globals(command), token: undefined }, { ...process.env, UAGENT_TOKEN: undefined })
        const attempt = (mfaCode?: string) => client.json('POST', '/auth/login', { email, password, ...(mfaCode ? { mfaCode } : {}) })
        let body
        try {
          body = await attempt(options.mfaCode)
        } catch (error) {
          // The account needs a code: ask for it on a terminal, else say which flag carries it.
          if (!(error instanceof CliError) || error.code !== 'MFA_REQUIRED') throw error
          if (!process.stdin.isTTY) throw new CliError('MFA_REQUIRED', 'this account has MFA enabled: pass the current 6-digit code with --mfa-code', EXIT.apiError)
          body = await attempt(await ask('MFA code: '))
        }
        saveCredentials({
          url: client.baseUrl,
          email: body.user.email,
          accessToken: body.accessToken,
          refreshToken: body.refreshToken,
          sessionId: body.sessionId,
          savedAt: new Date().toISOString(),
        })
        emit(command, body, () => console.log(`Logged in to ${client.baseUrl} as ${body.user.email} (${body.user.roles.join(', ')}); credentials in ${credentialsPath()}`))
      }),
    'uagent login --email me@example.com',
    'uagent login --email me@example.com --password "$PW" --mfa-code 123456',
  )
  example(
    program
      .command('logout')
      .description('Revoke the session on the server and forget the stored tokens')
      .action(async (_options, command: Command) => {
        const client = new ApiClient(globals(command))
        let body: unknown = { success: true, message: 'Not logged in' }
        try {
          body = await client.json('POST', '/auth/logout')
        } catch (error) {
          // A session that is already gone server-side still gets forgotten locally.
          if (!(error instanceof CliError) || error.exitCode !== EXIT.apiError) throw error
        }
        const removed = removeCredentials()
        emit(command, body, () => console.log(removed ? 'Logged out.' : 'No stored login.'))
      }),
    'uagent logout',
  )

  example(
    program
      .command('password')
      .description('Change your password; your other sessions are signed out (this login stays)')
      .option('--current <password>', 'current password (asked for without echo when omitted on a terminal)')
      .option('--new <password>', 'new password, 8+ characters (asked for twice without echo when omitted on a terminal)')
      .action(async (options: { current?: string; new?: string }, command: Command) => {
        const currentPassword = options.current ?? (await ask('Current password: ', true))
        let newPassword = options.new
        if (newPassword === undefined) {
          newPassword = await ask('New password: ', true)
          if ((await ask('New password again: ', true)) !== newPassword) throw new CliError('USAGE', 'the two new passwords differ', EXIT.usage)
        }
        const body = await new ApiClient(globals(command)).json('POST', '/auth/password', { currentPassword, newPassword })
        emit(command, body, () => console.log(`Password changed; ${body.sessionsRevoked} other session${body.sessionsRevoked === 1 ? '' : 's'} signed out.`))
      }),
    'uagent password',
    'uagent password --current "$OLD" --new "$NEW"',
  )

  const mfa = program.command('mfa').description('Two-factor authentication (TOTP)')
  example(
    mfa
      .command('setup')
      .description('Start MFA setup: prints the secret and an otpauth:// URL for your authenticator app')
      .action(async (_options, command: Command) => {
        const body = await new ApiClient(globals(command)).json('POST', '/auth/mfa/setup')
        emit(command, body, () => {
          console.log(keyValues([['secret', body.secret], ['otpauth URL', body.otpauthUrl]]))
          console.log('\nAdd it to your authenticator, then run: uagent mfa enable <code>')
        })
      }),
    'uagent mfa setup',
  )
  for (const [name, summary] of [
    ['enable', 'Confirm setup with a current code; logins then need --mfa-code'],
    ['disable', 'Turn MFA off (needs a current code)'],
  ] as const) {
    example(
      mfa
        .command(`${name} <code>`)
        .description(summary)
        .action(async (code: string, _options, command: Command) => {
          const body = await new ApiClient(globals(command)).json('POST', `/auth/mfa/${name}`, { code })
          emit(command, body, () => console.log(`MFA ${body.mfaEnabled ? 'enabled' : 'disabled'}.`))
        }),
      `uagent mfa ${name} 123456`,
    )
  }
}
