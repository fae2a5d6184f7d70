import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { trellis } from './support/cli.js';
import { testDatabases } from '@trellis/test-support';

// `trellis oauth-app create|list|disable|enable` against a real database.
describe.each(testDatabases())('trellis oauth-app on $name', (db) => {
  let url: string;
  let cleanup: () => Promise<void>;

  beforeAll(async () => {
    if (db.name === 'sqlite') {
      const dir = await mkdtemp(join(tmpdir(), 'trellis-oauth-cli-'));
      url = `sqlite:${join(dir, 'cli.db')}`;
      cleanup = () => rm(dir, { recursive: true, force: true });
    } else {
      const handle = await db.create();
      url = handle.url;
      cleanup = () => handle.drop();
    }
  });
  afterAll(() => cleanup?.());

  it('creates, lists, disables and enables apps', async () => {
    const created = await trellis(['oauth-app', 'create', '-d', url, '--name', 'CLI notes', '--redirect-uri', 'https://notes.example/cb', '--redirect-uri', 'com.example.notes:/cb', '--scope', 'profile:read', '--scope', 'chat:completions']);
    expect(created.code, created.stderr).toBe(0);
    const clientId = created.stdout.trim();
    expect(clientId).toMatch(/^[A-Za-z0-9_-]{22}$/);

    const chosen = await trellis(['oauth-app', 'create', '-d', url, '--name', 'Fixed', '--client-id', 'cli-fixed', '--redirect-uri', 'https://fixed.example/cb', '--json']);
    expect(chosen.code, chosen.stderr).toBe(0);
    expect(JSON.parse(chosen.stdout)).toMatchObject({ client_id: 'cli-fixed', scopes: ['profile:read'], status: 'active' });

    const list = await trellis(['oauth-app', 'list', '-d', url]);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^CLIENT_ID\s+STATUS\s+SCOPES\s+NAME/);
    expect(list.stdout).toContain(clientId);
    expect(list.stdout).toMatch(/cli-fixed\s+active\s+profile:read\s+Fixed/);

    const disabled = await trellis(['oauth-app', 'disable', '-d', url, clientId]);
    expect(disabled.code).toBe(0);
    expect(disabled.stdout.trim()).toBe(`${clientId} disabled`);
    const json = JSON.parse((await trellis(['oauth-app', 'list', '-d', url, '--search', 'cli notes', '--json'])).stdout);
    expect(json).toMatchObject({ total: 1, page: 1, size: 20 });
    expect(json.items[0]).toMatchObject({ client_id: clientId, status: 'disabled' });

    expect((await trellis(['oauth-app', 'enable', '-d', url, clientId])).stdout.trim()).toBe(`${clientId} enabled`);
  });

  it('exits 2 on invalid values and 1 on a taken client_id or an unknown app', async () => {
    const badUri = await trellis(['oauth-app', 'create', '-d', url, '--name', 'Bad', '--redirect-uri', 'http://plain.example/cb']);
    expect(badUri.code).toBe(2);
    expect(badUri.stderr).toMatch(/redirect_uris\.0 may use http only on a loopback host/);
    const badScope = await trellis(['oauth-app', 'create', '-d', url, '--name', 'Bad', '--redirect-uri', 'https://ok.example/cb', '--scope', 'mobile:full']);
    expect(badScope.code).toBe(2);
    expect(badScope.stderr).toMatch(/mobile:full/);
    await trellis(['oauth-app', 'create', '-d', url, '--name', 'Once', '--client-id', 'cli-once', '--redirect-uri', 'https://once.example/cb']);
    const taken = await trellis(['oauth-app', 'create', '-d', url, '--name', 'Twice', '--client-id', 'cli-once', '--redirect-uri', 'https://once.example/cb']);
    expect(taken.code).toBe(1);
    expect(taken.stderr).toMatch(/already in use/);
    const unknown = await trellis(['oauth-app', 'disable', '-d', url, 'no-such-app']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/No OAuth app has the client_id no-such-app/);
  });

  it('takes a client_id that begins with "-" after "--"', async () => {
    const created = await trellis(['oauth-app', 'create', '-d', url, '--name', 'Dash', '--client-id=-dash-app', '--redirect-uri', 'https://dash.example/cb']);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout.trim()).toBe('-dash-app');
    const asOption = await trellis(['oauth-app', 'disable', '-d', url, '-dash-app']);
    expect(asOption.code).toBe(2);
    const disabled = await trellis(['oauth-app', 'disable', '-d', url, '--', '-dash-app']);
    expect(disabled.code, disabled.stderr).toBe(0);
    expect(disabled.stdout.trim()).toBe('-dash-app disabled');
    const enabled = await trellis(['oauth-app', 'enable', '-d', url, '--json', '--', '-dash-app']);
    expect(enabled.code, enabled.stderr).toBe(0);
    expect(JSON.parse(enabled.stdout)).toMatchObject({ client_id: '-dash-app', status: 'active' });
    const help = await trellis(['oauth-app', 'disable', '--help']);
    expect(help.stdout).toContain('trellis oauth-app disable -- -my-app');
  });

  it('generates client ids that begin with a letter or digit, which every subcommand reads as an id', async () => {
    // The generator itself is checked over many ids in client-id.spec.ts; here a few CLI processes
    // (each one loads the whole CLI: 40 of them took over 30 s on a loaded machine).
    for (let i = 0; i < 12; i += 1) {
      const created = await trellis(['oauth-app', 'create', '-d', url, '--name', `Many ${i}`, '--redirect-uri', 'https://many.example/cb']);
      expect(created.code, created.stderr).toBe(0);
      expect(created.stdout.trim()).toMatch(/^[A-Za-z0-9][A-Za-z0-9_-]{21}$/);
    }
  }, 120_000);
});
