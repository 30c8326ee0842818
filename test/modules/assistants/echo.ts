/**
 * A model server speaking OpenAI's protocol that answers with everything it was sent: each
 * message as `<role>: <content>`. What an assistant's instructions and its collections' passages
 * did reach the model is then in the reply, on every surface. Every request is kept in `seen`.
 */
export function echoModel() {
  const seen: { model: string; temperature?: number; messages: { role: string; content: string }[] }[] = []
  const server = Bun.serve({
    port: 0,
    async fetch(request) {
      const { pathname } = new URL(request.url)
      if (pathname.endsWith('/models')) return Response.json({ data: [{ id: 'echo-model' }] })
      const body = (await request.json()) as { stream?: boolean; model: string; temperature?: number; messages: { role: string; content: string }[] }
      seen.push(body)
      const reply = body.messages.map((m) => `${m.role}: ${m.content}`).join('\n')
      if (!body.stream) {
        return Response.json({
          id: 'chatcmpl-echo',
          object: 'chat.completion',
          created: 1,
          model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }],
          usage: { prompt_tokens: reply.length, completion_tokens: reply.length, total_tokens: 2 * reply.length },
        })
      }
      const pieces = reply.match(/[\s\S]{1,200}/g) ?? ['']
      const events = pieces.map((content) => `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`)
      return new Response(`${events.join('')}data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`, {
        headers: { 'content-type': 'text/event-stream' },
      })
    },
  })
  return { url: `http://127.0.0.1:${server.port}`, seen, stop: () => server.stop(true) }
}
