import type { AuditRecorder } from '../../audit/service'
import { ResourceSharing } from '../../access/sharing'
import type { CollectionRow } from '../store'
import type { CollectionResolver } from './resolver'

export type { AccessView, ShareInput } from '../../access/sharing'

/**
 * A collection's access list: read and replaced by its owner, its managers and admins (the
 * resolver's `manager` need), as every shared kind's (ResourceSharing). Each change is audited
 * (`collection.access_changed`) and counts from the next request: nothing is cached.
 */
export class CollectionSharing extends ResourceSharing<CollectionRow> {
  constructor(resolver: CollectionResolver, audit?: AuditRecorder) {
    super(resolver, resolver.store, { key: (row) => row.id, target: (row) => row.public_id }, audit)
  }
}
