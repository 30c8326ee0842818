import { useEffect, useState } from 'preact/hooks'
import { api } from '../api'
import { Card, ErrorText, Field, useAction, when } from '../ui'

interface DeviceRequest {
  userCode: string
  status: 'pending' | 'approved' | 'denied' | 'used'
  clientName: string | null
  createdAt: string
  expiresAt: string
}

/**
 * `uagent login --web` sends people here: the code the terminal shows, checked against the one
 * on this page, and approved (the command line is then signed in as the person) or denied.
 */
export function DevicePage() {
  const [typed, setTyped] = useState(() => new URLSearchParams(location.search).get('code') ?? '')
  const [request, setRequest] = useState<DeviceRequest | null>(null)
  const lookup = useAction(async (code: string) => {
    setRequest(await api<DeviceRequest>('GET', `/auth/device/${encodeURIComponent(code.trim())}`))
  })
  const decide = useAction(async (approve: boolean) => {
    const body = await api<{ request: DeviceRequest }>('POST', `/auth/device/${encodeURIComponent(request!.userCode)}/${approve ? 'approve' : 'deny'}`)
    setRequest(body.request)
  })
  useEffect(() => {
    if (typed) void lookup.run(typed)
  }, [])
  return (
    <Card title="Sign in the command line">
      {!request && (
        <form
          class="stack"
          onSubmit={(event) => {
            event.preventDefault()
            void lookup.run(typed)
          }}
        >
          <Field label="Code shown by uagent login --web" autocomplete="off" required value={typed} onInput={(e) => setTyped(e.currentTarget.value)} error={lookup.error} />
          <button class="primary" type="submit" disabled={lookup.busy}>
            Continue
          </button>
        </form>
      )}
      {request && (
        <div class="stack">
          <p>
            Check that your terminal shows this code: <strong class="device-code">{request.userCode}</strong>
          </p>
          <p class="muted small">
            Asked {when(request.createdAt)}
            {request.clientName ? ` by ${request.clientName}` : ''}; valid until {when(request.expiresAt)}.
          </p>
          {request.status === 'pending' ? (
            <div class="row">
              <button class="primary" type="button" disabled={decide.busy} onClick={() => void decide.run(true)}>
                Approve
              </button>
              <button type="button" disabled={decide.busy} onClick={() => void decide.run(false)}>
                Deny
              </button>
            </div>
          ) : (
            <p role="status">
              {request.status === 'approved' || request.status === 'used' ? 'Approved: the command line is signed in as you. You can close this page.' : 'Denied: the command line was not signed in.'}
            </p>
          )}
          <ErrorText error={decide.error} />
        </div>
      )}
    </Card>
  )
}
