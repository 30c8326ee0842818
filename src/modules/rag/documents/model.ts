import { t } from 'elysia'

const Status = t.Union([t.Literal('ingested'), t.Literal('unchanged'), t.Literal('failed')])

export const UploadResponse = t.Object({
  success: t.Boolean({ description: 'false when any file failed' }),
  collection: t.String(),
  ingested: t.Integer(),
  unchanged: t.Integer({ description: 'Files whose id already held the same content (same SHA-256): left as they were' }),
  failed: t.Integer(),
  files: t.Array(
    t.Object({
      name: t.String({ description: 'The file name sent' }),
      id: t.String({ description: 'Document id: the file name, unless an `id` field came before the file; for each message of an .mbox, `<file id>#<Message-ID>`' }),
      status: Status,
      type: t.Optional(t.String({ description: 'pdf, image, docx, odt, rtf, epub, pptx, odp, xlsx, ods, csv, tsv, email, html, markdown, text or code' })),
      title: t.Optional(t.String()),
      bytes: t.Integer(),
      contentHash: t.String({ description: 'SHA-256 of the file bytes (hex)' }),
      source: t.Optional(t.Nullable(t.String())),
      chunks: t.Optional(t.Integer()),
      pages: t.Optional(t.Integer()),
      reason: t.Optional(t.String({ description: 'Why the file failed' })),
    }),
  ),
  removed: t.Optional(t.Array(t.String(), { description: 'Documents removed: messages no longer in a mailbox uploaded again' })),
  processingTime: t.Integer({ description: 'Milliseconds' }),
})

export const UploadBody = t.Object({
  files: t.Files({ description: 'One or more files: .pdf, images, .docx .odt .rtf .epub .pptx .odp .xlsx .ods .csv .tsv .eml .mbox, .html .md .txt and source files (docs/knowledge-base.md, "Formats and limits")' }),
  id: t.Optional(t.String({ description: 'Document id of the file part that follows (default: its file name)' })),
  source: t.Optional(t.String({ description: 'Source path of the file part that follows' })),
})

export const DocumentsQuery = t.Object({
  prefix: t.Optional(t.String({ maxLength: 512, description: 'Only ids starting with this' })),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: 10_000, default: 100 })),
  offset: t.Optional(t.Integer({ minimum: 0, maximum: 1_000_000_000, default: 0 })),
  view: t.Optional(t.Union([t.Literal('full'), t.Literal('hashes')], { default: 'full', description: '`hashes`: only id, source and contentHash' })),
})

export const DocumentSummary = t.Object({
  id: t.String(),
  title: t.Optional(t.String()),
  type: t.Optional(t.String()),
  chunks: t.Optional(t.Integer()),
  bytes: t.Optional(t.Integer()),
  ingestedAt: t.Optional(t.String()),
  source: t.Nullable(t.String()),
  contentHash: t.String(),
})

export const DocumentsResponse = t.Object({
  collection: t.String(),
  documents: t.Array(DocumentSummary),
  total: t.Integer(),
  limit: t.Integer(),
  offset: t.Integer(),
  hasMore: t.Boolean(),
})

export const DocumentResponse = t.Object({
  id: t.String(),
  title: t.String(),
  type: t.String(),
  chunks: t.Integer(),
  bytes: t.Integer(),
  ingestedAt: t.String(),
  source: t.Nullable(t.String()),
  contentHash: t.String(),
  pages: t.Optional(t.Integer()),
  ocr: t.Optional(t.Array(t.Object({ page: t.Integer({ minimum: 1 }), confidence: t.Number({ minimum: 0, maximum: 100 }) }), { description: 'Pages read by OCR, with the mean word confidence (0..100) on each' })),
  metadata: t.Record(t.String(), t.Unknown()),
  text: t.String({ description: 'The full extracted text' }),
})
