import { s } from '../../kernel/config/schema.js';

export const collabConfigSchema = s.object({
  mirrorDebounceMs: s
    .int()
    .range(0, 600_000)
    .default(1000)
    .describe('How long after the last collaborative change the Yjs document is mirrored to the stored JSON content (and its hash and a version).'),
  mirrorMaxWaitMs: s
    .int()
    .range(0, 3_600_000)
    .default(10_000)
    .describe('Longest time collaborative changes wait to be mirrored while editing goes on without pause.'),
  leaseMs: s
    .int()
    .range(1000, 3_600_000)
    .default(30_000)
    .describe('Lifetime of the collaborative lease a process holds on a document while it has collaborators (renewed every third of it). While the lease is held, content_source is collab and REST edits answer 423.'),
  participantTtlMs: s
    .int()
    .range(1000, 86_400_000)
    .default(120_000)
    .describe('How long a REST participant (POST /documents/:id/collab/join) counts as connected without calling join, edit or leave again.'),
  maxFrameBytes: s
    .int()
    .range(1024, 256 * 1024 * 1024)
    .default(32 * 1024 * 1024)
    .describe('Largest WebSocket message a collaborator with write permission may send on /v3/collab (a larger one closes the socket with 1009).'),
  maxReadOnlyFrameBytes: s
    .int()
    .range(1024, 16 * 1024 * 1024)
    .default(64 * 1024)
    .describe('Largest WebSocket message a read-only collaborator may send on /v3/collab: enough for sync requests and awareness (cursors, names), not for content.'),
});

export interface CollabConfig {
  mirrorDebounceMs: number;
  mirrorMaxWaitMs: number;
  leaseMs: number;
  participantTtlMs: number;
  maxFrameBytes: number;
  maxReadOnlyFrameBytes: number;
}
