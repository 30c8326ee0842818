import { useEffect, useRef, useState } from 'preact/hooks'
import uPlot from 'uplot'
import { api, download, isAdmin, request } from '../api'
import { Card, ErrorText, useAction, useId } from '../ui'

interface Dashboard {
  overview: { totalRequests: number; successRate: string; averageResponseTime: number; activeUsers: number; healthScore: number; uptime: number }
  requests: { byHour: number[]; topEndpoints: { endpoint: string; requests: number; averageTime: number; errorRate: number }[] }
  ai: { totalTokens: number; topModels: { model: string; requests: number; tokens: number }[] }
  usage: { userId: string; email: string | null; requests: number; tokens: number }[]
  feedback?: { model: string; up: number; down: number; upShare: number }[]
  feedbackByAssistant?: { assistant: { id: string; name: string }; up: number; down: number; upShare: number }[]
}
interface Metrics {
  metrics: Record<string, { timestamps: string[]; values: number[] }>
}
type Range = '1h' | '24h' | '7d' | '30d'

function TimeChart({ label, series }: { label: string; series: { name: string; timestamps: number[]; values: number[]; color: string }[] }) {
  const box = useRef<HTMLDivElement>(null)
  useEffect(() => {
    const element = box.current
    if (!element || !series[0]) return
    const width = Math.max(240, element.clientWidth)
    const accent = getComputedStyle(document.documentElement).getPropertyValue('--muted').trim() || '#888'
    const axis = { stroke: accent, grid: { stroke: 'rgba(128,128,128,.15)' }, ticks: { stroke: 'rgba(128,128,128,.3)' } }
    const chart = new uPlot(
      {
        width,
        height: 220,
        series: [{}, ...series.map((s) => ({ label: s.name, stroke: s.color, fill: `${s.color}22`, width: 2 }))],
        axes: [axis, axis],
        legend: { show: false },
      },
      [series[0].timestamps, ...series.map((s) => s.values)],
      element,
    )
    const resize = new ResizeObserver(() => chart.setSize({ width: Math.max(240, element.clientWidth), height: 220 }))
    resize.observe(element)
    return () => (resize.disconnect(), chart.destroy())
  }, [series])
  return <div class="chart" ref={box} role="img" aria-label={label} />
}

/** Horizontal bars for named counts; the numbers are in the text too, for screen readers. */
function Bars({ rows, label }: { rows: { name: string; value: number; note?: string }[]; label: string }) {
  const max = Math.max(1, ...rows.map((r) => r.value))
  if (rows.length === 0) return <p class="muted">No data yet.</p>
  return (
    <ul class="files" aria-label={label}>
      {rows.map((r) => (
        <li>
          <div class="row small">
            <span class="grow" style={{ overflowWrap: 'anywhere' }}>
              {r.name}
            </span>
            <strong>{r.value.toLocaleString()}</strong>
            {r.note && <span class="muted">{r.note}</span>}
          </div>
          <div style={{ height: '6px', borderRadius: '3px', background: 'var(--accent)', width: `${(r.value / max) * 100}%`, minWidth: '2px' }} />
        </li>
      ))}
    </ul>
  )
}

export function AnalyticsPage() {
  const [dashboard, setDashboard] = useState<Dashboard | null>(null)
  const [range, setRange] = useState<Range>('24h')
  const [metrics, setMetrics] = useState<Metrics | null>(null)
  const rangeId = useId('range')
  const load = useAction(async () => setDashboard(await api<Dashboard>('GET', '/analytics/dashboard')))
  const loadMetrics = useAction(async () => setMetrics(await api<Metrics>('GET', `/analytics/metrics?timeRange=${range}`)))
  const exporter = useAction(async (format: 'csv' | 'json') => {
    const response = await request(`/analytics/export?format=${format}&timeRange=${range}`)
    download(await response.blob(), `analytics-${range}.${format}`)
  })
  useEffect(() => void load.run(), [])
  useEffect(() => void loadMetrics.run(), [range])
  if (!isAdmin()) return <p class="error">Analytics are for admins.</p>
  const hours = dashboard?.requests.byHour ?? []
  const now = Math.floor(Date.now() / 3600_000) * 3600
  const stamps = (list: string[]) => list.map((t) => Date.parse(t) / 1000)
  return (
    <div>
      <div class="row" style={{ justifyContent: 'space-between' }}>
        <h1>Analytics</h1>
        <div class="row">
          <label for={rangeId} style={{ margin: 0 }}>
            Range
          </label>
          <select id={rangeId} value={range} onChange={(e) => setRange(e.currentTarget.value as Range)} style={{ width: 'auto' }}>
            <option value="1h">Last hour</option>
            <option value="24h">Last 24 hours</option>
            <option value="7d">Last 7 days</option>
            <option value="30d">Last 30 days</option>
          </select>
          <button type="button" onClick={() => void exporter.run('csv')}>
            Export CSV
          </button>
          <button type="button" onClick={() => void exporter.run('json')}>
            Export JSON
          </button>
        </div>
      </div>
      <ErrorText error={load.error ?? loadMetrics.error ?? exporter.error} />
      {dashboard && (
        <div class="stats">
          {[
            ['Requests', dashboard.overview.totalRequests.toLocaleString()],
            ['Success rate', dashboard.overview.successRate],
            ['Mean response', `${dashboard.overview.averageResponseTime} ms`],
            ['Active users (24 h)', String(dashboard.overview.activeUsers)],
            ['Tokens', dashboard.ai.totalTokens.toLocaleString()],
            ['Health score', String(dashboard.overview.healthScore)],
          ].map(([name, value]) => (
            <dl class="stat">
              <dt>{name}</dt>
              <dd>{value}</dd>
            </dl>
          ))}
        </div>
      )}
      <div class="grid2">
        <Card title="Requests by hour (last 24 h)">
          {dashboard && <TimeChart label="Requests per hour over the last 24 hours" series={[{ name: 'Requests', color: '#6366f1', timestamps: hours.map((_, i) => now - (hours.length - 1 - i) * 3600), values: hours }]} />}
        </Card>
        <Card title={`Traffic over ${range}`}>
          <p class="legend" aria-hidden="true">
            <i class="blue" />
            requests
            <i class="red" />
            errors
          </p>
          {metrics?.metrics.requests && (
            <TimeChart
              label={`Requests and errors over ${range}`}
              series={[
                { name: 'Requests', color: '#6366f1', timestamps: stamps(metrics.metrics.requests.timestamps), values: metrics.metrics.requests.values },
                ...(metrics.metrics.errors ? [{ name: 'Errors', color: '#ef4444', timestamps: stamps(metrics.metrics.errors.timestamps), values: metrics.metrics.errors.values }] : []),
              ]}
            />
          )}
        </Card>
        <Card title="Top endpoints">
          {dashboard && (
            <Bars label="Requests per endpoint" rows={dashboard.requests.topEndpoints.map((e) => ({ name: e.endpoint, value: e.requests, note: `${e.averageTime} ms` }))} />
          )}
        </Card>
        <Card title="Models and tokens">
          {dashboard && <Bars label="Tokens per model" rows={dashboard.ai.topModels.map((m) => ({ name: m.model, value: m.tokens, note: `${m.requests} request${m.requests === 1 ? '' : 's'}` }))} />}
        </Card>
        <Card title="Usage per user">
          {dashboard && <Bars label="Requests per user" rows={dashboard.usage.map((u) => ({ name: u.email ?? u.userId, value: u.requests, note: `${u.tokens} tokens` }))} />}
        </Card>
        <Card title="Replies rated up (%)">
          {dashboard && (
            <Bars
              label="Share of replies rated up per model"
              rows={(dashboard.feedback ?? []).map((f) => ({ name: f.model, value: Math.round(f.upShare * 100), note: `% · ${f.up} up, ${f.down} down` }))}
            />
          )}
          {dashboard && (dashboard.feedbackByAssistant ?? []).length > 0 && (
            <Bars
              label="Share of replies rated up per assistant"
              rows={dashboard.feedbackByAssistant!.map((f) => ({ name: `Assistant ${f.assistant.name}`, value: Math.round(f.upShare * 100), note: `% · ${f.up} up, ${f.down} down` }))}
            />
          )}
        </Card>
      </div>
    </div>
  )
}
