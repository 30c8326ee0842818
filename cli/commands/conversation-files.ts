import { basename } from 'node:path'
import { type ApiClient, CliError, EXIT } from '../client'
import { waitForJob } from './rag-jobs'

export interface ConversationFile {
  id: string
  name: string
  status: string
  reason?: string
  bytes?: number
  chunks?: number
  jobId?: string
}

/**
 * Attaches files to a conversation (POST /conversations/{id}/files, one request for all), waiting
 * with a progress bar for the job of slow ones. Returns the files as the conversation lists them.
 */
export async function attachFiles(client: ApiClient, conversationId: string, paths: string[], wait = true): Promise<{ files: ConversationFile[]; jobId?: string }> {
  const form = new FormData()
  for (const file of paths) {
    if (!(await Bun.file(file).exists())) throw new CliError('USAGE', `no such file: ${file}`, EXIT.usage)
    form.append('files', Bun.file(file), basename(file))
  }
  const response = await client.fetch(`/conversations/${encodeURIComponent(conversationId)}/files`, { method: 'POST', body: form })
  const body = (await response.json()) as { files: ConversationFile[]; jobId?: string }
  if (response.status !== 202 || !wait) return body
  await waitForJob(client, body.jobId!, `${paths.map((p) => basename(p)).join(', ')} (job ${body.jobId!.slice(0, 8)})`)
  const { files } = await client.json<{ files: ConversationFile[] }>('GET', `/conversations/${encodeURIComponent(conversationId)}/files`)
  const names = new Set(body.files.map((file) => file.id))
  return { jobId: body.jobId, files: files.filter((file) => names.has(file.id)) }
}

