import { useEffect, useState } from 'preact/hooks'
import { ApiError, signIn } from '../api'
import { ErrorText, Field, useAction } from '../ui'

interface Providers {
  password: boolean
  oidc: { name: string; loginUrl: string } | null
  ldap: boolean
}

/**
 * A single sign-on error the server sent the browser back with (`/app?sso_error=…`): read once,
 * then taken out of the address bar so that a reload does not show it again.
 */
function takeSsoError(): string | null {
  const params = new URLSearchParams(location.search)
  const message = params.get('sso_error')
  if (message === null) return null
  params.delete('sso_error')
  const rest = params.toString()
  history.replaceState(null, '', `${location.pathname}${rest ? `?${rest}` : ''}`)
  return message
}

export function LoginPage() {
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [code, setCode] = useState('')
  const [needsCode, setNeedsCode] = useState(false)
  const [codeError, setCodeError] = useState<unknown>(null)
  const [ssoError] = useState(takeSsoError)
  const [providers, setProviders] = useState<Providers | null>(null)
  useEffect(() => {
    fetch('/auth/providers')
      .then((response) => (response.ok ? response.json() : null))
      // Unknown: offer the password form, as before single sign-on.
      .then((body: Providers | null) => setProviders(body ?? { password: true, oidc: null, ldap: false }))
      .catch(() => setProviders({ password: true, oidc: null, ldap: false }))
  }, [])
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
  // Back to this very page (the device approval page, say) once signed in at the provider.
  const returnTo = `${location.pathname}${location.search}`
  const oidcHref = providers?.oidc ? `${providers.oidc.loginUrl}?returnTo=${encodeURIComponent(returnTo.startsWith('/app') ? returnTo : '/app')}` : null
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
        {ssoError && <ErrorText error={new Error(ssoError)} />}
        {oidcHref && (
          <a class="button primary" href={oidcHref}>
            Sign in with {providers!.oidc!.name}
          </a>
        )}
        {oidcHref && providers?.password && <p class="muted small">or with your email and password{providers.ldap ? ' (directory accounts too)' : ''}</p>}
        {providers?.password && (
          <>
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
            <button class={oidcHref ? undefined : 'primary'} type="submit" disabled={login.busy}>
              {login.busy ? 'Signing in…' : needsCode ? 'Verify and sign in' : 'Sign in'}
            </button>
          </>
        )}
      </form>
    </div>
  )
}
