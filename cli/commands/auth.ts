import type { Command } from 'commander'
import { hostname } from 'node:os'
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
      .option('--web', 'sign in through the browser instead (single sign-on accounts too): prints a URL and a code to approve there, and waits')
      .option('--no-browser', 'with --web: do not try to open a browser')
      .action(async (options: { email?: string; password?: string; mfaCode?: string; web?: boolean; browser: boolean }, command: Command) => {
        if (options.web) return loginThroughBrowser(command, options.browser)
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
        storeLogin(command, client, body)
      }),
    'uagent login --email me@example.com',
    'uagent login --web',
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
      .description('Change your password; your other sessions are signed out (this login stays) and your API keys deleted')
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

interface LoginBody {
  accessToken: string
  refreshToken: string
  sessionId: string
  user: { email: string; roles: string[] }
}

/** Keeps the tokens of a login (either way) and says so. */
function storeLogin(command: Command, client: ApiClient, body: LoginBody): void {
  saveCredentials({
    url: client.baseUrl,
    email: body.user.email,
    accessToken: body.accessToken,
    refreshToken: body.refreshToken,
    sessionId: body.sessionId,
    savedAt: new Date().toISOString(),
  })
  emit(command, body, () => console.log(`Logged in to ${client.baseUrl} as ${body.user.email} (${body.user.roles.join(', ')}); credentials in ${credentialsPath()}`))
}

/** Opens a URL in the desktop's browser when there is a way to (xdg-open, open); false otherwise. */
function openBrowser(url: string): boolean {
  const opener = process.platform === 'darwin' ? Bun.which('open') : Bun.which('xdg-open')
  if (!opener || (process.platform !== 'darwin' && !process.env.DISPLAY && !process.env.WAYLAND_DISPLAY)) return false
  try {
    Bun.spawn([opener, url], { stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' }).unref()
    return true
  } catch {
    return false
  }
}

/**
 * `uagent login --web`: the device code flow (as `gh auth login` does it). The URL and code go to
 * stderr, so that `--json` leaves stdout to the LoginResponse.
 */
async function loginThroughBrowser(command: Command, browser: boolean): Promise<void> {
  const client = new ApiClient({ ...globals(command), token: undefined }, { ...process.env, UAGENT_TOKEN: undefined })
  const grant = await client.json<{ deviceCode: string; userCode: string; verificationUrl: string; verificationUrlComplete: string; interval: number; expiresIn: number }>(
    'POST',
    '/auth/device',
    { clientName: `uagent on ${hostname()}`.slice(0, 100) },
  )
  console.error(`To sign in, open ${grant.verificationUrl} and enter the code ${grant.userCode}`)
  if (browser && openBrowser(grant.verificationUrlComplete)) console.error('(a browser was opened at that page)')
  console.error(`Waiting for the code to be approved (it expires in ${Math.round(grant.expiresIn / 60)} minutes)…`)
  let interval = grant.interval
  const deadline = Date.now() + grant.expiresIn * 1000
  while (Date.now() < deadline) {
    await Bun.sleep(interval * 1000)
    try {
      return storeLogin(command, client, await client.json<LoginBody>('POST', '/auth/device/token', { deviceCode: grant.deviceCode }))
    } catch (error) {
      if (!(error instanceof CliError)) throw error
      if (error.code === 'AUTHORIZATION_PENDING') continue
      if (error.code === 'SLOW_DOWN') {
        interval += 5
        continue
      }
      throw error
    }
  }
  throw new CliError('EXPIRED_TOKEN', 'the code expired before it was approved: run uagent login --web again', EXIT.apiError)
}
