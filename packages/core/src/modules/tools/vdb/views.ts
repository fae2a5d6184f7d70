import type { VdbRecord } from '../entities/vdb-record.entity.js';
import type { VdbRecordView } from '../schemas.js';

export const toVdbRecordView = (record: Pick<VdbRecord, 'id' | 'content' | 'tags' | 'metadata' | 'createdAt' | 'updatedAt'>, className: string): VdbRecordView => ({
  id: record.id,
  className,
  content: record.content,
  tags: record.tags,
  metadata: record.metadata,
  createdAt: record.createdAt.toISOString(),
  updatedAt: record.updatedAt.toISOString(),
});
