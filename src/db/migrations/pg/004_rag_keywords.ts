import type { PostgresMigration } from '.'

// The keyword index (SQLite: one FTS5 table per collection, migration 4). A tsvector per chunk with
// a GIN index, made with rag_english: the Porter stemmer (the snowball template's "porter", as
// FTS5's porter tokenizer) and no stop words (FTS5 keeps every word). The store hands PostgreSQL
// text already cut as FTS5's unicode61 cuts it (letters and digits), so positions and lengths
// count the same tokens. `tokens` is a chunk's length in tokens; rag_terms holds how many chunks
// of a collection hold each lexeme (BM25's document frequency), with rag_term_batches the counts of
// the latest writes not yet summed into it (one row per write: see PostgresRagStore.foldTerms), and
// the collection's chunk and token counts its other statistics. The index's list of entries not yet
// merged (GIN's fast update) is kept to 256 kB instead of 4 MB: every search reads that list whole,
// and a large one left by an ingest made searches three times slower until autovacuum came by.
export const ragKeywords: PostgresMigration = {
  version: 4,
  name: 'rag keywords',
  sql: `
    CREATE TEXT SEARCH DICTIONARY rag_porter (TEMPLATE = snowball, LANGUAGE = porter);
    CREATE TEXT SEARCH CONFIGURATION rag_english (COPY = english);
    ALTER TEXT SEARCH CONFIGURATION rag_english
      ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH rag_porter;
    ALTER TABLE rag_chunks ADD COLUMN tokens INTEGER NOT NULL DEFAULT 0, ADD COLUMN tsv TSVECTOR NOT NULL DEFAULT ''::tsvector;
    CREATE INDEX rag_chunks_tsv ON rag_chunks USING gin (tsv) WITH (gin_pending_list_limit = 256);
    ALTER TABLE rag_collections ADD COLUMN chunk_count BIGINT NOT NULL DEFAULT 0, ADD COLUMN token_count BIGINT NOT NULL DEFAULT 0;
    CREATE TABLE rag_terms (
      collection_id INTEGER NOT NULL REFERENCES rag_collections(id) ON DELETE CASCADE,
      lexeme TEXT COLLATE "C" NOT NULL,
      df INTEGER NOT NULL,
      PRIMARY KEY (collection_id, lexeme)
    ) WITH (fillfactor = 70);
    CREATE TABLE rag_term_batches (
      id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      collection_id INTEGER NOT NULL REFERENCES rag_collections(id) ON DELETE CASCADE,
      lexemes TEXT[] NOT NULL,
      counts INTEGER[] NOT NULL
    );
    CREATE INDEX rag_term_batches_collection ON rag_term_batches(collection_id);
  `,
}
