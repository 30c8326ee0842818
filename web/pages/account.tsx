import { useState } from 'preact/hooks'
import { api, currentUser } from '../api'
import { Card, ErrorText, Field, useAction } from '../ui'

export function AccountPage() {
  const user = currentUser.value!
  return (
    <div>
      <h1>Account</h1>
      <p class="muted">
        Signed in as {user.email} ({user.roles.join(', ')})
      </p>
      <div class="grid2">
        <Password />
        <Mfa />
      </div>
    </div>
  )
}

function Password() {
  const [current, setCurrent] = useState('')
  const [next, setNext] = useState('')
  const [done, setDone] = useState<string | null>(null)
  const change = useAction(async () => {
    setDone(null)
    const result = await api<{ message: string }>('POST', '/auth/password', { currentPassword: current, newPassword: next })
    setDone(result.message)
    setCurrent('')
    setNext('')
  })
  return (
    <Card title="Change password">
      <form class="stack" onSubmit={(e) => (e.preventDefault(), void change.run())}>
        <Field label="Current password" type="password" autocomplete="current-password" required value={current} onInput={(e) => setCurrent(e.currentTarget.value)} />
        <Field label="New password" type="password" autocomplete="new-password" required minLength={8} value={next} onInput={(e) => setNext(e.currentTarget.value)} hint="At least 8 characters." />
        <ErrorText error={change.error} />
        {done && <p class="ok">{done}</p>}
        <button type="submit" class="primary" disabled={change.busy}>
          Change password
        </button>
      </form>
    </Card>
  )
}

function Mfa() {
  const user = currentUser.value!
  const [setup, setSetup] = useState<{ secret: string; otpauthUrl: string } | null>(null)
  const [code, setCode] = useState('')
  const start = useAction(async () => setSetup(await api('POST', '/auth/mfa/setup')))
  const confirm = useAction(async () => {
    const result = await api<{ mfaEnabled: boolean }>('POST', user.mfaEnabled ? '/auth/mfa/disable' : '/auth/mfa/enable', { code })
    currentUser.value = { ...user, mfaEnabled: result.mfaEnabled }
    setSetup(null)
    setCode('')
  })
  return (
    <Card title="Two-step sign-in (TOTP)">
      <p>{user.mfaEnabled ? 'On: sign-in asks for a code from your authenticator app.' : 'Off.'}</p>
      {!user.mfaEnabled && !setup && (
        <button type="button" onClick={() => void start.run()}>
          Set up
        </button>
      )}
      <ErrorText error={start.error} />
      {setup && (
        <div class="stack">
          <p>Add this secret to your authenticator app, then enter the code it shows:</p>
          <div class="secret" aria-label="TOTP secret">
            {setup.secret}
          </div>
          <p class="muted small" style={{ overflowWrap: 'anywhere' }}>
            {setup.otpauthUrl}
          </p>
        </div>
      )}
      {(setup || user.mfaEnabled) && (
        <form class="row" onSubmit={(e) => (e.preventDefault(), void confirm.run())}>
          <div class="grow">
            <Field label="Code" inputMode="numeric" autocomplete="one-time-code" required value={code} onInput={(e) => setCode(e.currentTarget.value)} error={confirm.error} />
          </div>
          <button type="submit">{user.mfaEnabled ? 'Turn off' : 'Turn on'}</button>
        </form>
      )}
    </Card>
  )
}
