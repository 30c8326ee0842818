import type { ComponentChildren, JSX } from 'preact'
import { useState } from 'preact/hooks'
import { messageOf } from './api'

let nextId = 0
/** A stable id for label/for and aria-describedby pairs. */
export function useId(prefix: string): string {
  const [id] = useState(() => `${prefix}-${++nextId}`)
  return id
}

/** An error in words, announced to screen readers, placed next to what caused it. */
export function ErrorText({ error, id }: { error: unknown; id?: string }) {
  if (!error) return null
  return (
    <p class="error" role="alert" id={id}>
      {messageOf(error)}
    </p>
  )
}

type FieldProps = { label: string; error?: unknown; hint?: string } & JSX.InputHTMLAttributes<HTMLInputElement>

export function Field({ label, error, hint, ...input }: FieldProps) {
  const id = useId('f')
  return (
    <div>
      <label for={id}>{label}</label>
      <input id={id} aria-invalid={error ? true : undefined} aria-describedby={error ? `${id}-e` : undefined} {...input} />
      {hint && <p class="muted small">{hint}</p>}
      <ErrorText error={error} id={`${id}-e`} />
    </div>
  )
}

/** Runs an async action, remembering whether it runs and how it failed. */
export function useAction<A extends unknown[]>(action: (...args: A) => Promise<unknown>) {
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<unknown>(null)
  const run = async (...args: A) => {
    setBusy(true)
    setError(null)
    try {
      await action(...args)
      return true
    } catch (caught) {
      setError(caught)
      return false
    } finally {
      setBusy(false)
    }
  }
  return { busy, error, run, setError }
}

export function Card({ title, children, actions }: { title?: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="card" aria-label={title}>
      {(title || actions) && (
        <div class="row" style={{ justifyContent: 'space-between', marginBottom: '.5rem' }}>
          {title && <h2>{title}</h2>}
          {actions}
        </div>
      )}
      {children}
    </section>
  )
}

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—')
export const bytes = (n: number) => (n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1048576).toFixed(1)} MB`)
