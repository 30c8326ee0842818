import { useEffect, useState } from 'preact/hooks'
import { api, isAdmin } from '../api'
import { Card, ErrorText, Field, useAction, useId } from '../ui'
import { type JsonSchema, parseValues, SchemaFields, useSchemaForm } from './schema-form'

interface Plugin {
  name: string
  version: string
  description: string
  status: 'enabled' | 'disabled' | 'error'
  builtin: boolean
  source: string
  message?: string
}
interface Detail extends Plugin {
  actions: Record<string, { description: string; parameters: JsonSchema }>
}

export function PluginsPage() {
  const [plugins, setPlugins] = useState<Plugin[]>([])
  const [open, setOpen] = useState<string | null>(null)
  const load = useAction(async () => setPlugins((await api<{ plugins: Plugin[] }>('GET', '/plugins')).plugins))
  useEffect(() => void load.run(), [])
  return (
    <div>
      <h1>Plugins</h1>
      <ErrorText error={load.error} />
      <div class="grid2">
        <div>
          {plugins.map((p) => (
            <PluginCard plugin={p} open={open === p.name} onToggle={() => setOpen(open === p.name ? null : p.name)} onChanged={() => void load.run()} />
          ))}
        </div>
        {isAdmin() && <Install onInstalled={() => void load.run()} />}
      </div>
    </div>
  )
}

function PluginCard({ plugin, open, onToggle, onChanged }: { plugin: Plugin; open: boolean; onToggle: () => void; onChanged: () => void }) {
  const manage = useAction(async (what: 'enable' | 'disable' | 'remove') => {
    if (what === 'remove') await api('DELETE', `/plugins/${plugin.name}`)
    else await api('POST', `/plugins/${plugin.name}/${what}`)
    onChanged()
  })
  const badge = plugin.status === 'enabled' ? 'badge' : plugin.status === 'error' ? 'badge bad' : 'badge off'
  return (
    <Card
      title={plugin.name}
      actions={
        <span class="row">
          <span class={badge}>{plugin.status}</span>
          <span class="muted small">v{plugin.version}</span>
        </span>
      }
    >
      <p class="muted">{plugin.description}</p>
      {plugin.message && <p class="error">{plugin.message}</p>}
      <div class="row">
        <button type="button" aria-expanded={open} onClick={onToggle} disabled={plugin.status !== 'enabled'}>
          {open ? 'Hide actions' : 'Run an action'}
        </button>
        {isAdmin() && (
          <>
            {plugin.status === 'enabled' ? (
              <button type="button" onClick={() => void manage.run('disable')}>
                Disable
              </button>
            ) : (
              <button type="button" onClick={() => void manage.run('enable')}>
                Enable
              </button>
            )}
            {!plugin.builtin && (
              <button type="button" class="danger" onClick={() => confirm(`Remove ${plugin.name}?`) && void manage.run('remove')}>
                Remove
              </button>
            )}
          </>
        )}
      </div>
      <ErrorText error={manage.error} />
      {open && <Actions name={plugin.name} />}
    </Card>
  )
}

function Actions({ name }: { name: string }) {
  const [detail, setDetail] = useState<Detail | null>(null)
  const [action, setAction] = useState('')
  const [error, setError] = useState<unknown>(null)
  const selectId = useId('action')
  useEffect(() => {
    api<Detail>('GET', `/plugins/${name}`).then((d) => {
      setDetail(d)
      setAction(Object.keys(d.actions)[0] ?? '')
    }, setError)
  }, [name])
  if (error) return <ErrorText error={error} />
  if (!detail) return <p class="muted">Loading…</p>
  const spec = detail.actions[action]
  return (
    <div class="stack" style={{ marginTop: '.75rem' }}>
      <div>
        <label for={selectId}>Action</label>
        <select id={selectId} value={action} onChange={(e) => setAction(e.currentTarget.value)}>
          {Object.keys(detail.actions).map((a) => (
            <option value={a}>{a}</option>
          ))}
        </select>
        {spec && <p class="muted small">{spec.description}</p>}
      </div>
      {spec && <RunForm plugin={name} action={action} schema={spec.parameters} key={action} />}
    </div>
  )
}

function RunForm({ plugin, action, schema }: { plugin: string; action: string; schema: JsonSchema }) {
  const form = useSchemaForm()
  const [result, setResult] = useState<unknown>(undefined)
  const run = useAction(async () => {
    const { values, errors } = parseValues(schema, form.values)
    form.setErrors(errors)
    if (Object.keys(errors).length) return
    const response = await api<{ result: unknown; executionTime: number }>('POST', `/plugins/${plugin}/execute`, { action, parameters: values })
    setResult(response.result)
  })
  return (
    <form class="stack" aria-label={`Run ${plugin} ${action}`} onSubmit={(e) => (e.preventDefault(), void run.run())}>
      <SchemaFields schema={schema} values={form.values} errors={form.errors} onChange={form.onChange} />
      <ErrorText error={run.error} />
      <button type="submit" class="primary" disabled={run.busy}>
        Run {action}
      </button>
      {result !== undefined && (
        <div class="results" aria-live="polite">
          <h3>Result</h3>
          <pre aria-label="Result">{JSON.stringify(result, null, 2)}</pre>
        </div>
      )}
    </form>
  )
}

function Install({ onInstalled }: { onInstalled: () => void }) {
  const [source, setSource] = useState<'npm' | 'git' | 'url'>('npm')
  const [pkg, setPkg] = useState('')
  const [version, setVersion] = useState('')
  const [done, setDone] = useState<string | null>(null)
  const sourceId = useId('source')
  const install = useAction(async () => {
    setDone(null)
    const result = await api<{ message: string }>('POST', '/plugins/install', { source, package: pkg, version })
    setDone(result.message)
    onInstalled()
  })
  return (
    <Card title="Install a plugin">
      <form class="stack" onSubmit={(e) => (e.preventDefault(), void install.run())}>
        <div>
          <label for={sourceId}>Source</label>
          <select id={sourceId} value={source} onChange={(e) => setSource(e.currentTarget.value as 'npm')}>
            <option value="npm">npm package</option>
            <option value="git">git repository</option>
            <option value="url">URL of a .tgz</option>
          </select>
        </div>
        <Field label={source === 'npm' ? 'Package name' : source === 'git' ? 'Repository URL or path' : 'Tarball URL'} required value={pkg} onInput={(e) => setPkg(e.currentTarget.value)} />
        <Field label="Version, tag or commit" value={version} onInput={(e) => setVersion(e.currentTarget.value)} hint={source === 'url' ? 'Ignored for a URL.' : undefined} />
        <ErrorText error={install.error} />
        {done && <p class="ok">{done}</p>}
        <button type="submit" class="primary" disabled={install.busy}>
          {install.busy ? 'Installing…' : 'Install'}
        </button>
      </form>
    </Card>
  )
}
