import { describe, expect, it } from 'vitest';
import type { Principal } from '../../../kernel/auth/principal.js';
import { TrellisError } from '../../../kernel/errors.js';
import type { DocumentService } from '../../documents/index.js';
import type { CollabService } from './collab.service.js';
import { SmartEditService } from './smart-edit.service.js';

// The routing rules of smart-edit, with stand-ins for the document store and the channel: which
// road an edit takes, when it is retried and with which base_version.
const principal = { kind: 'jwt', userId: 'u' } as Principal;
const em = { fork: () => em } as never;
const conflict = () => new TrellisError('conflict', 'version_conflict', 'stale');
const locked = () => new TrellisError('locked', 'document_locked', 'locked');

function setup(options: { source?: string[]; restOutcomes: Array<Error | string>; live?: boolean }) {
  const sources = [...(options.source ?? ['rest'])];
  const calls: string[] = [];
  let hash = 'h0';
  const documents = {
    async requireDocument() {
      return { doc: { contentHash: hash } };
    },
    contentSource() {
      return (sources.length > 1 ? sources.shift() : sources[0]) as 'rest' | 'collab';
    },
    async edit(_em: unknown, _p: unknown, _id: string, request: { base_version: string }, source: string) {
      calls.push(`rest:${request.base_version}:${source}`);
      const next = options.restOutcomes.shift()!;
      if (next instanceof Error) {
        hash = `${hash}'`;
        throw next;
      }
      return { version: next, results: [] };
    },
  } as unknown as DocumentService;
  const collab = {
    isLive: () => options.live ?? false,
    async edit(_id: string, _request: unknown, _p: unknown, source: string) {
      calls.push(`collab:${source}`);
      return { version: 'collab-version', results: [] };
    },
  } as unknown as CollabService;
  return { service: new SmartEditService(documents, collab), calls };
}

describe('smart-edit routing', () => {
  it('goes straight to the collaborative channel in collab mode', async () => {
    const { service, calls } = setup({ source: ['collab'], restOutcomes: [] });
    expect(await service.edit(em, principal, 'd', { mode: 'commands', commands: [{ op: 'list' }] })).toMatchObject({ mode: 'collab', version: 'collab-version' });
    expect(calls).toEqual(['collab:smart_edit']);
  });

  it('edits over REST with the current version when no base_version is given', async () => {
    const { service, calls } = setup({ restOutcomes: ['v1'] });
    expect(await service.edit(em, principal, 'd', { mode: 'commands', commands: [] })).toMatchObject({ mode: 'rest', version: 'v1' });
    expect(calls).toEqual(['rest:h0:smart_edit']);
  });

  it('switches to the channel on 423', async () => {
    const { service, calls } = setup({ restOutcomes: [locked()] });
    expect((await service.edit(em, principal, 'd', { mode: 'commands', commands: [] })).mode).toBe('collab');
    expect(calls).toEqual(['rest:h0:smart_edit', 'collab:smart_edit']);
  });

  it('retries a 409 with the fresh version when the caller gave no base_version', async () => {
    const { service, calls } = setup({ restOutcomes: [conflict(), 'v2'] });
    expect(await service.edit(em, principal, 'd', { mode: 'commands', commands: [] })).toMatchObject({ mode: 'rest', version: 'v2' });
    expect(calls).toEqual(["rest:h0:smart_edit", "rest:h0':smart_edit"]);
  });

  it('checks content_source again before the retry, and takes the channel if it turned collab', async () => {
    const { service, calls } = setup({ source: ['rest', 'collab'], restOutcomes: [conflict()] });
    expect((await service.edit(em, principal, 'd', { mode: 'commands', commands: [] })).mode).toBe('collab');
    expect(calls).toEqual(['rest:h0:smart_edit', 'collab:smart_edit']);
  });

  it('retries version conflicts until the edit lands when the caller gave no base_version (never 409)', async () => {
    const { service, calls } = setup({ restOutcomes: [conflict(), conflict(), conflict(), 'v4'] });
    expect(await service.edit(em, principal, 'd', { mode: 'commands', commands: [] })).toMatchObject({ mode: 'rest', version: 'v4' });
    expect(calls).toEqual(['rest:h0:smart_edit', "rest:h0':smart_edit", "rest:h0'':smart_edit", "rest:h0''':smart_edit"]);
  });

  it('gives up with 503 busy after the time bound, and never retries a caller base_version', async () => {
    const endless = setup({ restOutcomes: Array.from({ length: 50 }, conflict) });
    endless.service.retryForMs = 0;
    await expect(endless.service.edit(em, principal, 'd', { mode: 'commands', commands: [] })).rejects.toMatchObject({ code: 'busy', status: 503 });
    const given = setup({ restOutcomes: [conflict()] });
    await expect(given.service.edit(em, principal, 'd', { mode: 'commands', commands: [], base_version: 'mine' })).rejects.toMatchObject({ code: 'version_conflict' });
    expect(given.calls).toEqual(['rest:mine:smart_edit']);
  });
});
