import { useEffect, useRef, useState } from 'preact/hooks'
import { api } from '../api'
import { renderMarkdown } from '../markdown'
import { Card, ErrorText, useAction, useId, when } from '../ui'

interface Agent {
  name: string
  role: string
  description: string
}
interface Result {
  agent: string
  role: string
  response: string
  executionTime: number
  round: number
}
interface Task {
  taskId: string
  status: 'queued' | 'running' | 'completed' | 'failed' | 'cancelled'
  progress: number
  currentAgent: string | null
  task: string
  agents: string[]
  parallel: boolean
  createdAt: string
  error?: string
  results?: Result[]
  finalSynthesis?: string
  totalExecutionTime?: number
  agentsDone?: number
}

const finished = (status: Task['status']) => status === 'completed' || status === 'failed' || status === 'cancelled'

export function AgentsPage() {
  const [agents, setAgents] = useState<Agent[]>([])
  const [picked, setPicked] = useState<string[]>([])
  const [text, setText] = useState('')
  const [parallel, setParallel] = useState(false)
  const [task, setTask] = useState<Task | null>(null)
  const [past, setPast] = useState<Task[]>([])
  const [pickError, setPickError] = useState<string | null>(null)
  const timer = useRef<ReturnType<typeof setTimeout>>()
  const taskId = useId('task')

  const loadPast = useAction(async () => setPast((await api<{ tasks: Task[] }>('GET', '/agents/tasks?limit=20')).tasks))
  useEffect(() => {
    api<{ agents: Agent[] }>('GET', '/agents').then(({ agents }) => {
      setAgents(agents)
      setPicked(agents.slice(0, 2).map((a) => a.name))
    }, loadPast.setError)
    void loadPast.run()
    return () => clearTimeout(timer.current)
  }, [])

  const follow = (id: string) => {
    clearTimeout(timer.current)
    const poll = async () => {
      try {
        const current = await api<Task>('GET', `/agents/task/${id}`)
        setTask(current)
        if (!finished(current.status)) timer.current = setTimeout(poll, 500)
        else void loadPast.run()
      } catch (error) {
        run.setError(error)
      }
    }
    void poll()
  }

  const run = useAction(async () => {
    if (picked.length === 0) return setPickError('Pick at least one agent.')
    setPickError(null)
    const started = await api<{ taskId: string }>('POST', '/agents/execute', { task: text, agents: picked, parallel, async: true })
    follow(started.taskId)
  })
  const cancel = useAction(async () => {
    await api('DELETE', `/agents/task/${task!.taskId}`)
    follow(task!.taskId)
  })

  return (
    <div>
      <h1>Agents</h1>
      <div class="grid2">
        <Card title="New task">
          <form class="stack" onSubmit={(e) => (e.preventDefault(), void run.run())}>
            <fieldset class="stack" style={{ border: 0, padding: 0, margin: 0 }}>
              <legend class="small" style={{ fontWeight: 600 }}>
                Agents
              </legend>
              <div>
                {agents.map((a) => (
                  <label class="check" title={a.description}>
                    <input
                      type="checkbox"
                      checked={picked.includes(a.name)}
                      onChange={(e) => setPicked(e.currentTarget.checked ? [...picked, a.name] : picked.filter((n) => n !== a.name))}
                    />
                    {a.name} <span class="muted small">({a.role})</span>
                  </label>
                ))}
              </div>
              {pickError && <p class="error" role="alert">{pickError}</p>}
            </fieldset>
            <div>
              <label for={taskId}>Task</label>
              <textarea id={taskId} rows={4} required value={text} onInput={(e) => setText(e.currentTarget.value)} placeholder="What should the agents work on?" />
            </div>
            <fieldset style={{ border: 0, padding: 0, margin: 0 }}>
              <legend class="small" style={{ fontWeight: 600 }}>
                Order
              </legend>
              <label class="check">
                <input type="radio" name="mode" checked={!parallel} onChange={() => setParallel(false)} /> Sequential
              </label>
              <label class="check">
                <input type="radio" name="mode" checked={parallel} onChange={() => setParallel(true)} /> Parallel
              </label>
            </fieldset>
            <ErrorText error={run.error} />
            <button type="submit" class="primary" disabled={run.busy || (task !== null && !finished(task.status))}>
              Run
            </button>
          </form>
        </Card>
        {task && (
          <Card title="Progress" actions={!finished(task.status) && <button type="button" class="danger" onClick={() => void cancel.run()}>Cancel</button>}>
            <div aria-live="polite">
              <p>
                <span class={`badge${task.status === 'failed' || task.status === 'cancelled' ? ' bad' : ''}`}>{task.status}</span>{' '}
                {task.currentAgent && !finished(task.status) && <span class="muted">working: {task.currentAgent}</span>}
              </p>
              <progress aria-label="Task progress" max={100} value={task.progress} />
              <p class="muted small">{task.progress}% done</p>
            </div>
            <ErrorText error={cancel.error ?? task.error} />
            {(task.results ?? []).map((r) => (
              <details>
                <summary>
                  {r.agent} <span class="muted small">({r.role}, round {r.round}, {(r.executionTime / 1000).toFixed(1)} s)</span>
                </summary>
                <div class="md" dangerouslySetInnerHTML={{ __html: renderMarkdown(r.response) }} />
              </details>
            ))}
            {task.finalSynthesis && (
              <section aria-label="Final synthesis">
                <h3>Final synthesis</h3>
                <div class="md" dangerouslySetInnerHTML={{ __html: renderMarkdown(task.finalSynthesis) }} />
              </section>
            )}
          </Card>
        )}
      </div>
      <Card title="Past tasks">
        <ErrorText error={loadPast.error} />
        <div class="table-wrap">
          <table>
            <thead>
              <tr>
                <th>Task</th>
                <th>Agents</th>
                <th>Status</th>
                <th>Started</th>
              </tr>
            </thead>
            <tbody>
              {past.map((t) => (
                <tr>
                  <td>
                    <button type="button" class="link" onClick={() => follow(t.taskId)}>
                      {t.task.length > 80 ? `${t.task.slice(0, 80)}…` : t.task}
                    </button>
                  </td>
                  <td>{t.agents.join(', ')}</td>
                  <td>{t.status}</td>
                  <td>{when(t.createdAt)}</td>
                </tr>
              ))}
              {past.length === 0 && (
                <tr>
                  <td colSpan={4} class="muted">
                    No tasks yet.
                  </td>
                </tr>
              )}
            </tbody>
          </table>
        </div>
      </Card>
    </div>
  )
}
