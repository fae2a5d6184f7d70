import type { VdbRecord } from '../entities/vdb-record.entity.js';

export interface VdbRecordView {
  id: string;
  className: string;
  content: string;
  tags: Array<string | number | boolean>;
  metadata: Record<string, unknown>;
  createdAt: string;
  updatedAt: string;
}

export const toVdbRecordView = (record: VdbRecord, className: string): VdbRecordView => ({
  id: record.id,
  className,
  content: record.content,
  tags: record.tags,
  metadata: record.metadata,
  createdAt: record.createdAt.toISOString(),
  updatedAt: record.updatedAt.toISOString(),
});
