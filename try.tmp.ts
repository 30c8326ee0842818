import { extractEpub } from './src/modules/rag/extract/epub'
import { extractPptx } from './src/modules/rag/extract/pptx'
import { extractOdt } from './src/modules/rag/extract/odf'
const f = (p: string) => Bun.file(p).arrayBuffer().then((b) => new Uint8Array(b))
console.log(extractEpub(await f('/tmp/df/t.epub')))
console.log(extractPptx(await f('/tmp/df/t.pptx')))
console.log(extractOdt(await f('/tmp/df/t.odt')))
