import type { CollectionRow } from '../../store'

/** A rag_collections row as PostgreSQL returns it (bigints as strings), typed. */
export function collectionRow(row: Record<string, unknown>): CollectionRow {
  return {
    id: Number(row.id),
    public_id: row.public_id as string,
    user_id: row.user_id as string,
    name: row.name as string,
    embedder: row.embedder as string,
    dimensions: Number(row.dimensions),
    created_at: row.created_at as string,
    version: Number(row.version),
  }
}
