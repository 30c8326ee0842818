// PostgreSQL's RAG store, in parts: the class implementing RagStore (store.ts), its keyword side
// (keywords.ts), its vectors (vectors.ts: in memory, vectors-memory.ts, or in the database with
// pgvector, vectors-pgvector.ts), the document library's reads (documents.ts), and what
// `uagent admin migrate-to-postgres` derives from the copied rows (copy.ts).
export { COLLECTION_COLUMNS, POSTGRES_KEYWORD_POSTINGS, PostgresRagStore } from './store'
export { bestFirst, filteredOffsets, keywordText, matchLines, positionCount, termFrequency } from './keywords'
export type { PostgresVectorSearch } from './vectors'
export { POSTGRES_VECTOR_CACHE } from './vectors-memory'
export { INDEX_MIN_ROWS, type PgvectorSetup, preparePgvector } from './vectors-pgvector'
