import { useState } from 'preact/hooks'
import { ApiError, signIn } from '../api'
import { ErrorText, Field, useAction } from '../ui'

export function LoginPage() {
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [code, setCode] = useState('')
  const [needsCode, setNeedsCode] = useState(false)
  const [codeError, setCodeError] = useState<unknown>(null)
  const login = useAction(async () => {
    setCodeError(null)
    try {
      await signIn(email, password, needsCode ? code : undefined)
    } catch (error) {
      if (error instanceof ApiError && error.code === 'MFA_REQUIRED') {
        setNeedsCode(true)
        return
      }
      if (error instanceof ApiError && error.code === 'INVALID_MFA_CODE') {
        setCodeError(error)
        return
      }
      throw error
    }
  })
  return (
    <div class="center">
      <form
        class="card login stack"
        aria-label="Sign in"
        onSubmit={(event) => {
          event.preventDefault()
          void login.run()
        }}
      >
        <div class="brand">
          <img src="/app/assets/icon.svg" alt="" width={28} height={28} />
          <h1 style={{ margin: 0 }}>Universal Agent</h1>
        </div>
        <Field label="Email" type="email" autocomplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        <Field label="Password" type="password" autocomplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        {needsCode && (
          <Field
            label="Authenticator code"
            hint="This account has two-step sign-in: enter the 6-digit code from your authenticator app."
            inputMode="numeric"
            autocomplete="one-time-code"
            pattern="[0-9]{6}"
            required
            autoFocus
            value={code}
            error={codeError}
            onInput={(e) => setCode(e.currentTarget.value)}
          />
        )}
        <ErrorText error={login.error} />
        <button class="primary" type="submit" disabled={login.busy}>
          {login.busy ? 'Signing in…' : needsCode ? 'Verify and sign in' : 'Sign in'}
        </button>
      </form>
    </div>
  )
}
