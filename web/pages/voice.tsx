import { useEffect, useRef, useState } from 'preact/hooks'
import { api, request } from '../api'
import { toBase64, WavRecorder } from '../recorder'
import { Card, ErrorText, Field, useAction, useId } from '../ui'

interface CommandResult {
  command: string
  intent: string
  action: string
  response: string
  audioResponse: string
  executed: boolean
  confidence: number
  transcript?: { text: string; confidence: number }
}

/** Audio routes need the bearer token, so the player gets a blob: URL of the fetched bytes. */
async function audioBlob(url: string): Promise<Blob> {
  return (await request(url)).blob()
}

function Player({ url, name }: { url: string; name?: string }) {
  const [src, setSrc] = useState<string | null>(null)
  const [error, setError] = useState<unknown>(null)
  const player = useRef<HTMLAudioElement>(null)
  useEffect(() => {
    let object: string | null = null
    audioBlob(url).then((blob) => {
      object = URL.createObjectURL(blob)
      setSrc(object)
    }, setError)
    return () => object && URL.revokeObjectURL(object)
  }, [url])
  useEffect(() => {
    if (src) player.current?.play().catch(() => {})
  }, [src])
  return (
    <div class="row">
      <ErrorText error={error} />
      {src && <audio ref={player} controls src={src} aria-label="Spoken reply" class="grow" />}
      {src && name && (
        <a class="button" href={src} download={name}>
          Download
        </a>
      )}
    </div>
  )
}

export function VoicePage() {
  return (
    <div>
      <h1>Voice</h1>
      <div class="grid2">
        <Command />
        <Speech />
      </div>
    </div>
  )
}

function Command() {
  const [recording, setRecording] = useState(false)
  const [result, setResult] = useState<CommandResult | null>(null)
  const [typed, setTyped] = useState('')
  const recorder = useRef<WavRecorder | null>(null)
  const send = useAction(async (body: { audio?: string; command?: string }) => setResult(await api<CommandResult>('POST', '/voice/command', body)))
  const begin = async () => {
    if (recording) return
    send.setError(null)
    try {
      recorder.current = new WavRecorder()
      await recorder.current.start()
      setRecording(true)
    } catch (error) {
      send.setError(new Error(`The microphone could not be opened: ${(error as Error).message}`))
    }
  }
  const end = async () => {
    if (!recording || !recorder.current) return
    setRecording(false)
    const wav = await recorder.current.stop()
    recorder.current = null
    await send.run({ audio: toBase64(wav) })
  }
  return (
    <Card title="Speak a command">
      <button
        type="button"
        class="hold primary"
        aria-pressed={recording}
        onPointerDown={(e) => (e.preventDefault(), void begin())}
        onPointerUp={() => void end()}
        onPointerLeave={() => void end()}
        onKeyDown={(e) => (e.key === ' ' || e.key === 'Enter') && !e.repeat && (e.preventDefault(), void begin())}
        onKeyUp={(e) => (e.key === ' ' || e.key === 'Enter') && (e.preventDefault(), void end())}
      >
        {recording ? 'Listening… release to send' : send.busy ? 'Working…' : 'Hold to speak (or hold Space)'}
      </button>
      <form class="row" style={{ marginTop: '.75rem' }} onSubmit={(e) => (e.preventDefault(), void send.run({ command: typed }))}>
        <div class="grow">
          <Field label="Or type the command" value={typed} required onInput={(e) => setTyped(e.currentTarget.value)} placeholder="e.g. what is the system status" />
        </div>
        <button type="submit" disabled={send.busy}>
          Send
        </button>
      </form>
      <ErrorText error={send.error} />
      {result && (
        <div aria-live="polite" class="stack" style={{ marginTop: '.75rem' }}>
          <dl class="kv">
            <dt>Heard</dt>
            <dd>{result.transcript?.text ?? result.command}</dd>
            <dt>Intent</dt>
            <dd>
              {result.intent} <span class="muted small">({Math.round(result.confidence * 100)}%)</span>
            </dd>
            <dt>Action</dt>
            <dd>
              {result.action} {result.executed ? <span class="badge">done</span> : <span class="badge off">not run</span>}
            </dd>
            <dt>Reply</dt>
            <dd>{result.response}</dd>
          </dl>
          {result.audioResponse && <Player url={result.audioResponse} />}
        </div>
      )}
    </Card>
  )
}

function Speech() {
  const [voices, setVoices] = useState<{ id: string; name: string; language: string }[]>([])
  const [voice, setVoice] = useState('')
  const [text, setText] = useState('')
  const [format, setFormat] = useState<'mp3' | 'wav' | 'ogg'>('mp3')
  const [speed, setSpeed] = useState(1)
  const [audio, setAudio] = useState<{ url: string; name: string } | null>(null)
  const ids = { text: useId('tts'), voice: useId('voice'), format: useId('format'), speed: useId('speed') }
  useEffect(() => {
    api<{ voices: { id: string; name: string; language: string }[] }>('GET', '/voice/voices').then(({ voices }) => {
      setVoices(voices)
      setVoice(voices.find((v) => v.language.startsWith('en'))?.id ?? voices[0]?.id ?? '')
    }, speak.setError)
  }, [])
  const speak = useAction(async () => {
    const language = voices.find((v) => v.id === voice)?.language ?? 'en'
    const made = await api<{ audioUrl: string }>('POST', '/voice/tts', { text, voice, language, speed, format })
    setAudio({ url: made.audioUrl, name: `speech.${format}` })
  })
  return (
    <Card title="Text to speech">
      <form class="stack" onSubmit={(e) => (e.preventDefault(), void speak.run())}>
        <div>
          <label for={ids.text}>Text</label>
          <textarea id={ids.text} rows={3} required maxLength={5000} value={text} onInput={(e) => setText(e.currentTarget.value)} />
        </div>
        <div class="row">
          <div class="grow">
            <label for={ids.voice}>Voice</label>
            <select id={ids.voice} value={voice} onChange={(e) => setVoice(e.currentTarget.value)}>
              {voices.map((v) => (
                <option value={v.id}>
                  {v.name} ({v.language})
                </option>
              ))}
            </select>
          </div>
          <div>
            <label for={ids.format}>Format</label>
            <select id={ids.format} value={format} onChange={(e) => setFormat(e.currentTarget.value as 'mp3')}>
              <option value="mp3">MP3</option>
              <option value="wav">WAV</option>
              <option value="ogg">Ogg</option>
            </select>
          </div>
          <div>
            <label for={ids.speed}>Speed {speed.toFixed(1)}×</label>
            <input id={ids.speed} type="range" min={0.5} max={2} step={0.1} value={speed} onInput={(e) => setSpeed(Number(e.currentTarget.value))} />
          </div>
        </div>
        <ErrorText error={speak.error} />
        <button type="submit" class="primary" disabled={speak.busy}>
          {speak.busy ? 'Speaking…' : 'Speak'}
        </button>
      </form>
      {audio && <Player url={audio.url} name={audio.name} key={audio.url} />}
    </Card>
  )
}
