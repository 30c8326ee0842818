import { afterAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { listModels, pullModel } from '../../src/ml/pull'
import { tempDir } from '../helpers'

const FIXTURES = join(import.meta.dir, '../fixtures/models')

/** A local stand-in for the hub: `/{org}/{name}/resolve/main/{file}` served from the fixtures. */
const requests: string[] = []
const hub = Bun.serve({
  port: 0,
  fetch(request) {
    const path = new URL(request.url).pathname
    requests.push(path)
    const match = /^\/(.+?\/.+?)\/resolve\/main\/(.+)$/.exec(path)
    if (!match) return new Response('not found', { status: 404 })
    const file = Bun.file(join(FIXTURES, match[1]!, match[2]!))
    return file.size > 0 ? new Response(file) : new Response('not found', { status: 404 })
  },
})
afterAll(() => hub.stop(true))

describe('models pull', () => {
  test('downloads a model in the hub layout into the models dir, with progress', async () => {
    const modelsDir = tempDir('models')
    const progress: string[] = []
    const result = await pullModel({
      id: 'fixtures/tiny-llama',
      modelsDir,
      endpoint: `http://127.0.0.1:${hub.port}`,
      onProgress: (p) => progress.push(p.file),
    })
    expect(result.files).toContain('onnx/model.onnx')
    expect(result.files).toContain('generation_config.json')
    for (const file of result.files) {
      expect(readFileSync(join(modelsDir, 'fixtures/tiny-llama', file))).toEqual(readFileSync(join(FIXTURES, 'fixtures/tiny-llama', file)))
    }
    expect(progress).toContain('tokenizer.json')
    // The quantized file was tried first and was not there.
    expect(requests).toContain('/fixtures/tiny-llama/resolve/main/onnx/model_quantized.onnx')
    expect(readdirSync(modelsDir).filter((f) => f.startsWith('.partial'))).toEqual([])

    const listed = listModels({ modelsDir, chatModel: 'fixtures/tiny-llama' })
    expect(listed.models).toEqual([{ id: 'fixtures/tiny-llama', kind: 'chat', sizeBytes: expect.any(Number), quantized: false, active: 'generator' }])
  })

  test('a model the hub does not have leaves nothing behind', async () => {
    const modelsDir = tempDir('models')
    const error = await pullModel({ id: 'acme/nothing', modelsDir, endpoint: `http://127.0.0.1:${hub.port}` }).catch((e) => e)
    expect(error.message).toContain('config.json')
    expect(readdirSync(modelsDir)).toEqual([])
    expect(existsSync(join(modelsDir, 'acme/nothing'))).toBe(false)
  })

  test('rejects ids that could escape the models dir', async () => {
    const error = await pullModel({ id: '../etc', modelsDir: tmpdir() }).catch((e) => e)
    expect(error.message).toContain('not a model id')
  })

  test('file names given with --file cannot leave the model folder', async () => {
    const root = tempDir('models')
    const modelsDir = join(root, 'models')
    for (const file of ['../../escape.txt', '/etc/passwd', 'onnx/../../x', '']) {
      const error = await pullModel({ id: 'fixtures/tiny-llama', modelsDir, endpoint: `http://127.0.0.1:${hub.port}`, files: ['config.json', file] }).catch((e) => e)
      expect(error.message).toContain('is not a file of a model folder')
    }
    expect(readdirSync(root)).toEqual([])
  })

  test('a web page, an empty file or a hub gone silent is an error, and leaves nothing behind', async () => {
    let mode = 'html'
    const odd = Bun.serve({
      port: 0,
      fetch() {
        if (mode === 'html') return new Response('<html>Sign in</html>', { headers: { 'content-type': 'text/html; charset=utf-8' } })
        if (mode === 'empty') return new Response('')
        return new Response(new ReadableStream({ pull: () => new Promise(() => {}) }))
      },
    })
    try {
      const modelsDir = tempDir('models')
      for (const [name, expected] of [['html', 'web page'], ['empty', 'empty file'], ['stall', 'went silent']]) {
        mode = name!
        const error = await pullModel({ id: 'acme/odd', modelsDir, endpoint: `http://127.0.0.1:${odd.port}`, idleMs: 200 }).catch((e) => e)
        expect(error.message, name).toContain(expected)
        expect(readdirSync(modelsDir), name).toEqual([])
      }
    } finally {
      odd.stop(true)
    }
  })

  test('what an interrupted pull left behind is cleaned up by the next one; a broken link never stops the listing', async () => {
    const modelsDir = tempDir('models')
    mkdirSync(join(modelsDir, '.partial-fixtures--tiny-bert-4242'), { recursive: true })
    mkdirSync(join(modelsDir, '.partial-fixtures--tiny-bert'), { recursive: true })
    await pullModel({ id: 'fixtures/tiny-bert', modelsDir, endpoint: `http://127.0.0.1:${hub.port}` })
    expect(readdirSync(modelsDir).filter((f) => f.startsWith('.partial'))).toEqual([])
    mkdirSync(join(modelsDir, 'acme/linked/onnx'), { recursive: true })
    writeFileSync(join(modelsDir, 'acme/linked/config.json'), '{}')
    symlinkSync('/nonexistent/blob', join(modelsDir, 'acme/linked/onnx/model.onnx'))
    expect(listModels({ modelsDir }).models.map((m) => m.id)).toEqual(['acme/linked', 'fixtures/tiny-bert'])
  })
})
