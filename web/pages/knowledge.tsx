import { useEffect, useState } from 'preact/hooks'
import { api, bearer, refresh } from '../api'
import { renderMarkdown } from '../markdown'
import { bytes, Card, ErrorText, Field, useAction, useId, when } from '../ui'

interface Collection {
  name: string
  documents: number
  chunks: number
  createdAt: string
}
interface Doc {
  id: string
  title?: string
  type?: string
  chunks?: number
  bytes?: number
  ingestedAt?: string
}
interface FileReport {
  name: string
  status: string
  chunks?: number
  reason?: string
  type?: string
}
interface JobFile {
  name: string
  status: string
  pages?: number
  pagesDone?: number
  chunks?: number
  reason?: string
  type?: string
}
/** An ingestion job (GET /rag/jobs/{id}): an upload the server goes on with after answering (OCR, long reads). */
interface Job {
  id: string
  collection: string
  status: 'queued' | 'running' | 'completed' | 'failed' | 'cancelled'
  progress: number
  files: JobFile[]
  error?: string
}
interface Upload {
  name: string
  loaded: number
  total: number
  report?: FileReport
  error?: string
  /** Set when the server made the upload a job: followed until it ends. */
  job?: Job
}

const JOB_ENDED = ['completed', 'failed', 'cancelled']
const JOB_POLL_MS = 500

/** One file, one request: XHR reports upload progress (fetch cannot). A file the server makes a job (202) comes back as that job. */
function uploadFile(collection: string, file: File, onProgress: (loaded: number, total: number) => void): Promise<{ report: FileReport } | { jobId: string }> {
  const send = (): Promise<{ status: number; body: any }> =>
    new Promise((resolve, reject) => {
      const xhr = new XMLHttpRequest()
      xhr.open('POST', `/rag/collections/${encodeURIComponent(collection)}/files`)
      xhr.setRequestHeader('authorization', `Bearer ${bearer()}`)
      xhr.responseType = 'json'
      // The request's bytes (the multipart body), not only the file's.
      xhr.upload.onprogress = (event) => onProgress(event.loaded, event.lengthComputable ? event.total : file.size)
      xhr.onload = () => resolve({ status: xhr.status, body: xhr.response })
      xhr.onerror = () => reject(new Error('The upload failed: the server could not be reached'))
      const form = new FormData()
      form.append('files', file, file.name)
      xhr.send(form)
    })
  return send().then(async (result) => {
    if (result.status === 401 && ['TOKEN_EXPIRED', 'UNAUTHORIZED'].includes(result.body?.code) && (await refresh())) result = await send()
    if (result.status === 202) return { jobId: result.body.jobId as string }
    if (result.status !== 200) throw new Error(result.body?.message ?? `Upload failed (${result.status})`)
    return { report: result.body.files[0] as FileReport }
  })
}

export function KnowledgePage() {
  const [collections, setCollections] = useState<Collection[]>([])
  const [selected, setSelected] = useState('')
  const [newName, setNewName] = useState('')
  const list = useAction(async () => {
    const { collections } = await api<{ collections: Collection[] }>('GET', '/rag/collections')
    setCollections(collections)
    if (!selected && collections[0]) setSelected(collections[0].name)
  })
  const create = useAction(async () => {
    const { collection } = await api<{ collection: Collection }>('POST', '/rag/collections', { name: newName.trim() })
    setNewName('')
    setSelected(collection.name)
    await list.run()
  })
  useEffect(() => void list.run(), [])
  const names = collections.map((c) => c.name)
  const stored = collections.find((c) => c.name === selected)

  return (
    <div>
      <h1>Knowledge base</h1>
      <div class="grid2">
        <Card title="Collections">
          <ErrorText error={list.error} />
          <ul class="files" aria-label="Your collections">
            {names.map((name) => {
              const c = collections.find((x) => x.name === name)
              return (
                <li class="row" key={name}>
                  <label class="check grow">
                    <input type="radio" name="collection" checked={selected === name} onChange={() => setSelected(name)} />
                    <strong>{name}</strong>
                    <span class="muted small">{c ? `${c.documents} document${c.documents === 1 ? '' : 's'} · ${c.chunks} passage${c.chunks === 1 ? '' : 's'}` : ''}</span>
                  </label>
                  {c && <DeleteCollection name={name} onDeleted={() => (setSelected(''), void list.run())} />}
                </li>
              )
            })}
            {names.length === 0 && <li class="muted">No collections yet.</li>}
          </ul>
          <form class="row" onSubmit={(event) => (event.preventDefault(), void create.run())}>
            <div class="grow">
              <Field label="New collection" value={newName} maxLength={64} required error={create.error} onInput={(e) => setNewName(e.currentTarget.value)} placeholder="e.g. handbook" />
            </div>
            <button type="submit" disabled={create.busy}>
              Create
            </button>
          </form>
        </Card>
        {stored && <UploadBox collection={stored.name} onDone={() => void list.run()} />}
      </div>
      {stored && <Documents collection={stored.name} key={`${stored.name}-${stored.documents}`} onChanged={() => void list.run()} />}
      {stored && <Ask collection={stored.name} />}
    </div>
  )
}

function DeleteCollection({ name, onDeleted }: { name: string; onDeleted: () => void }) {
  const action = useAction(async () => {
    await api('DELETE', `/rag/collections/${encodeURIComponent(name)}`)
    onDeleted()
  })
  return (
    <>
      <button type="button" class="danger" aria-label={`Delete collection ${name}`} onClick={() => confirm(`Delete the collection "${name}" and its documents?`) && void action.run()}>
        Delete
      </button>
      <ErrorText error={action.error} />
    </>
  )
}

function UploadBox({ collection, onDone }: { collection: string; onDone: () => void }) {
  const [uploads, setUploads] = useState<Upload[]>([])
  const [over, setOver] = useState(false)
  const inputId = useId('files')
  const [jobError, setJobError] = useState<string | null>(null)
  const start = async (files: File[]) => {
    const base = uploads.length
    setUploads((list) => [...list, ...files.map((f) => ({ name: f.name, loaded: 0, total: f.size }))])
    const patch = (index: number, change: Partial<Upload>) => setUploads((list) => list.map((u, i) => (i === base + index ? { ...u, ...change } : u)))
    await Promise.all(
      files.map((file, index) =>
        uploadFile(collection, file, (loaded, total) => patch(index, { loaded, total })).then(
          (result) =>
            setUploads((list) =>
              list.map((u, i) =>
                i !== base + index
                  ? u
                  : 'report' in result
                    ? { ...u, report: result.report, loaded: u.total }
                    : { ...u, loaded: u.total, job: { id: result.jobId, collection, status: 'queued', progress: 0, files: [{ name: file.name, status: 'queued' }] } },
              ),
            ),
          (error: Error) => patch(index, { error: error.message }),
        ),
      ),
    )
    onDone()
  }
  // Jobs still going (this page's uploads, and the collection's from before a reload) are polled until they end.
  useEffect(() => {
    void api<{ jobs: Job[] }>('GET', '/rag/jobs?limit=50').then(
      ({ jobs }) => {
        const going = jobs.filter((job) => job.collection === collection && !JOB_ENDED.includes(job.status)).reverse()
        if (going.length) setUploads((list) => [...going.map((job) => ({ name: job.files.map((f) => f.name).join(', '), loaded: 1, total: 1, job })), ...list])
      },
      (error: Error) => setJobError(error.message),
    )
  }, [collection])
  const following = uploads.filter((u) => u.job && !JOB_ENDED.includes(u.job.status)).map((u) => u.job!.id)
  useEffect(() => {
    if (!following.length) return
    const timer = setTimeout(async () => {
      try {
        const jobs = await Promise.all(following.map((id) => api<Job>('GET', `/rag/jobs/${encodeURIComponent(id)}`)))
        const byId = new Map(jobs.map((job) => [job.id, job]))
        setUploads((list) => list.map((u) => (u.job && byId.has(u.job.id) ? { ...u, job: byId.get(u.job.id)! } : u)))
        if (jobs.some((job) => JOB_ENDED.includes(job.status))) onDone()
      } catch (error) {
        setJobError((error as Error).message)
      }
    }, JOB_POLL_MS)
    return () => clearTimeout(timer)
  }, [uploads])
  const cancel = useAction(async (id: string) => {
    const job = await api<Job>('DELETE', `/rag/jobs/${encodeURIComponent(id)}`)
    setUploads((list) => list.map((u) => (u.job?.id === id ? { ...u, job } : u)))
  })
  return (
    <Card title={`Upload to ${collection}`}>
      <div
        class={`drop${over ? ' over' : ''}`}
        onDragOver={(e) => (e.preventDefault(), setOver(true))}
        onDragLeave={() => setOver(false)}
        onDrop={(e) => {
          e.preventDefault()
          setOver(false)
          void start([...(e.dataTransfer?.files ?? [])])
        }}
      >
        <p>Drop PDFs, scans and images, Word, OpenDocument, slides, spreadsheets, e-books, e-mails, HTML, Markdown or text files here, or</p>
        <button type="button" onClick={() => (document.getElementById(inputId) as HTMLInputElement).click()}>
          Choose files
        </button>
        <input id={inputId} type="file" multiple hidden aria-label="Files to upload" accept=".pdf,.docx,.odt,.rtf,.epub,.pptx,.odp,.xlsx,.ods,.csv,.tsv,.eml,.mbox,.html,.htm,.md,.markdown,.txt,image/*,text/*" onChange={(e) => void start([...(e.currentTarget.files ?? [])])} />
      </div>
      <ErrorText error={jobError ?? cancel.error} />
      <ul class="files" aria-label="Uploads">
        {uploads.map((u) =>
          u.job ? (
            <JobItem key={u.job.id} job={u.job} onCancel={() => void cancel.run(u.job!.id)} />
          ) : (
            <li>
              <div class="row">
                <span class="grow">{u.name}</span>
                <span class="small">
                  {u.error ? <span class="error">{u.error}</span> : u.report ? <Report report={u.report} /> : `${bytes(u.loaded)} / ${bytes(u.total)}`}
                </span>
              </div>
              <progress aria-label={`Upload of ${u.name}`} max={u.total || 1} value={u.loaded} />
            </li>
          ),
        )}
      </ul>
    </Card>
  )
}

/** An upload the server goes on with: each file's pages read, the job's progress, and Cancel while it runs. */
function JobItem({ job, onCancel }: { job: Job; onCancel: () => void }) {
  const ended = JOB_ENDED.includes(job.status)
  const label = job.files.map((f) => f.name).join(', ')
  return (
    <li aria-label={`Ingestion of ${label}`}>
      {job.files.map((file) => (
        <div class="row">
          <span class="grow">{file.name}</span>
          <span class="small">
            {['queued', 'running'].includes(file.status) ? (
              <span class="job-file">
                {file.status === 'queued' ? 'waiting' : 'reading'}
                {file.pages ? ` · ${file.pagesDone ?? 0} of ${file.pages} pages read` : ''}
              </span>
            ) : file.status === 'cancelled' ? (
              <span class="muted">cancelled</span>
            ) : (
              <Report report={file} />
            )}
          </span>
        </div>
      ))}
      <div class="row">
        <progress class="grow" aria-label={`Progress of ${label}`} max={100} value={job.progress} />
        <span class="small badge">{job.status}</span>
        {!ended && (
          <button type="button" class="danger" aria-label={`Cancel ingestion of ${label}`} onClick={onCancel}>
            Cancel
          </button>
        )}
      </div>
      {job.error && <div class="error small">{job.error}</div>}
    </li>
  )
}

function Report({ report }: { report: FileReport }) {
  if (report.status === 'failed') return <span class="error">failed: {report.reason}</span>
  return (
    <span class="ok">
      {report.status}
      {report.chunks !== undefined ? ` · ${report.chunks} passages` : ''}
      {report.type ? ` · ${report.type}` : ''}
    </span>
  )
}

function Documents({ collection, onChanged }: { collection: string; onChanged: () => void }) {
  const [docs, setDocs] = useState<Doc[]>([])
  const load = useAction(async () => {
    const result = await api<{ documents: Doc[] }>('GET', `/rag/collections/${encodeURIComponent(collection)}/documents?limit=100`)
    setDocs(result.documents)
  })
  const remove = useAction(async (id: string) => {
    await api('DELETE', `/rag/collections/${encodeURIComponent(collection)}/documents/${encodeURIComponent(id)}`)
    onChanged()
  })
  useEffect(() => void load.run(), [collection])
  return (
    <Card title={`Documents in ${collection}`}>
      <ErrorText error={load.error ?? remove.error} />
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th>Title</th>
              <th>Type</th>
              <th>Passages</th>
              <th>Added</th>
              <th>
                <span class="skip">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {docs.map((d) => (
              <tr key={d.id}>
                <td>{d.title ?? d.id}</td>
                <td>{d.type ?? '—'}</td>
                <td>{d.chunks ?? '—'}</td>
                <td>{when(d.ingestedAt)}</td>
                <td>
                  <button type="button" class="danger" aria-label={`Delete document ${d.title ?? d.id}`} onClick={() => void remove.run(d.id)}>
                    Delete
                  </button>
                </td>
              </tr>
            ))}
            {docs.length === 0 && (
              <tr>
                <td colSpan={5} class="muted">
                  No documents yet.
                </td>
              </tr>
            )}
          </tbody>
        </table>
      </div>
    </Card>
  )
}

function Ask({ collection }: { collection: string }) {
  const [query, setQuery] = useState('')
  const [question, setQuestion] = useState('')
  const [results, setResults] = useState<{ id: string; content: string; score: number }[] | null>(null)
  const [answer, setAnswer] = useState<{ answer: string; sources: { id: string; title: string; relevanceScore: number }[] } | null>(null)
  const search = useAction(async () => setResults((await api<{ results: any[] }>('POST', '/rag/search', { query, collection, limit: 8 })).results))
  const ask = useAction(async () => setAnswer(await api('POST', '/rag/answer', { question, collection })))
  return (
    <div class="grid2">
      <Card title="Search">
        <form class="row" onSubmit={(e) => (e.preventDefault(), void search.run())}>
          <div class="grow">
            <Field label="Search passages" type="search" required value={query} onInput={(e) => setQuery(e.currentTarget.value)} error={search.error} />
          </div>
          <button type="submit" disabled={search.busy}>
            Search
          </button>
        </form>
        {results && (
          <ol class="files" aria-label="Search results">
            {results.map((r) => (
              <li>
                <div class="muted small">
                  {r.id} · score {r.score.toFixed(3)}
                </div>
                <div class="passage">{r.content}</div>
              </li>
            ))}
            {results.length === 0 && <li class="muted">Nothing matched.</li>}
          </ol>
        )}
      </Card>
      <Card title="Ask">
        <form class="row" onSubmit={(e) => (e.preventDefault(), void ask.run())}>
          <div class="grow">
            <Field label="Question" required value={question} onInput={(e) => setQuestion(e.currentTarget.value)} error={ask.error} />
          </div>
          <button type="submit" class="primary" disabled={ask.busy}>
            {ask.busy ? 'Thinking…' : 'Ask'}
          </button>
        </form>
        {answer && (
          <div aria-label="Answer">
            <div class="md" dangerouslySetInnerHTML={{ __html: renderMarkdown(answer.answer) }} />
            <ol class="small">
              {answer.sources.map((s) => (
                <li>
                  {s.title} <span class="muted">({s.relevanceScore.toFixed(3)})</span>
                </li>
              ))}
            </ol>
          </div>
        )}
      </Card>
    </div>
  )
}
