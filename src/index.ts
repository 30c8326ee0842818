// Entry point of the server (`bun run start`, `uagent serve`).
//
// GET /stream carries the message in its query string: up to 32,000 characters, which is up to
// 384 KB once UTF-8 and percent-encoded. Bun's HTTP parser refuses request headers over 16 KB
// (431, before the app sees the request) unless started with --max-http-header-size, a flag that
// can only be given at launch; so a process started without it replaces itself (same pid, via
// execve) with one started with it. `bun run start` passes the flag and skips this step.
import { maxHeaderSize } from 'node:http'

export const MAX_HEADER_BYTES = 512 * 1024

if (maxHeaderSize < MAX_HEADER_BYTES && typeof process.execve === 'function' && !process.env.UAGENT_REEXECUTED) {
  process.execve(process.execPath, [process.execPath, `--max-http-header-size=${MAX_HEADER_BYTES}`, ...process.argv.slice(1)], {
    ...process.env,
    UAGENT_REEXECUTED: '1',
  })
}
if (maxHeaderSize < MAX_HEADER_BYTES) {
  console.error(`warning: request headers are limited to ${maxHeaderSize} bytes; start with bun --max-http-header-size=${MAX_HEADER_BYTES} for long /stream messages`)
}
await import('./server')
