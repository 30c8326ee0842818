/**
 * Moves named records from a server's own SQLite database into a shared store (PostgreSQL): each
 * is copied unless the shared store has that name already (its record wins), then deleted from
 * SQLite, so that a later removal is not undone at the next start. Returns the names moved and
 * those the shared store had.
 */
export async function moveByName<R extends { name: string }>(
  records: R[],
  steps: { exists(name: string): Promise<unknown>; copy(record: R): Promise<void>; remove(name: string): void },
): Promise<{ moved: string[]; kept: string[] }> {
  const moved: string[] = []
  const kept: string[] = []
  for (const record of records) {
    if (await steps.exists(record.name)) kept.push(record.name)
    else {
      await steps.copy(record)
      moved.push(record.name)
    }
    steps.remove(record.name)
  }
  return { moved, kept }
}
