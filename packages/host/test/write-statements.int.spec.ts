import pg from 'pg';
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { documentsModule, entityManagerServiceIdentifier, projectsModule } from '@trellis/core';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { testDatabases, type TestDatabase } from '@trellis/test-support';
import { actor, createDocument, createProject, doc, paragraph } from './documents.fixtures.js';
import { authorize, discover, exchange, startOAuthHost, type AdminApp, type OAuthTestHost } from './oauth-helpers.js';

/**
 * What a refresh grant and a document edit write (issue 14): every statement the driver runs is
 * recorded by a hook in the driver itself (better-sqlite3's Statement, pg's Client), so ORM
 * queries and prepared statements alike are seen, and triggers installed on every column of every
 * table record each UPDATE that names a column in its SET list without changing its value
 * (SQLite: `UPDATE OF col ... WHEN OLD.col IS NEW.col`; PostgreSQL: the same with IS NOT DISTINCT
 * FROM). A write that rewrites a column with its old value (a date the unit of work thought had
 * changed, a row flushed for nothing) fails the test with the table and column.
 */

type Recorder = { sql: string[] } | null;
let recording: Recorder = null;
const restore: Array<() => void> = [];

interface KnexClient {
  acquireConnection(): Promise<{ prepare(sql: string): object }>;
  releaseConnection(connection: object): Promise<unknown>;
}

/** Records every statement the drivers run while `recording` is set. */
async function hookDrivers(db: TestDatabase, client: KnexClient): Promise<void> {
  if (db.name === 'postgres') {
    const clientPrototype = pg.Client.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
    const query = clientPrototype['query']!;
    clientPrototype['query'] = function (this: unknown, config: unknown, ...rest: unknown[]) {
      recording?.sql.push(typeof config === 'string' ? config : ((config as { text?: string }).text ?? String(config)));
      return query.call(this, config, ...rest);
    };
    restore.push(() => (clientPrototype['query'] = query));
    return;
  }
  // better-sqlite3: every statement, the ORM's and the prepared ones, runs through a Statement.
  const connection = await client.acquireConnection();
  const statementPrototype = Object.getPrototypeOf(connection.prepare('select 1')) as Record<string, (...args: unknown[]) => unknown>;
  await client.releaseConnection(connection);
  for (const method of ['run', 'all', 'get', 'iterate']) {
    const original = statementPrototype[method]!;
    statementPrototype[method] = function (this: { source: string }, ...args: unknown[]) {
      recording?.sql.push(this.source);
      return original.apply(this, args);
    };
    restore.push(() => (statementPrototype[method] = original));
  }
}

interface RawConnection {
  execute(sql: string, params?: unknown[], method?: 'all' | 'run'): Promise<unknown>;
}

/** Installs the "unchanged column in SET" triggers on every column of every table. */
async function installNeedlessWriteTriggers(db: TestDatabase, connection: RawConnection): Promise<void> {
  if (db.name === 'sqlite') {
    await connection.execute('create temp table needless_writes (table_name text, column_name text)');
    const tables = (await connection.execute("select name from sqlite_master where type = 'table' and name not like 'sqlite_%'", [], 'all')) as Array<{ name: string }>;
    for (const { name: table } of tables) {
      const columns = (await connection.execute(`select name from pragma_table_info('${table}')`, [], 'all')) as Array<{ name: string }>;
      for (const { name: column } of columns) {
        await connection.execute(
          `create temp trigger "needless_${table}_${column}" after update of "${column}" on main."${table}" for each row when old."${column}" is new."${column}" begin insert into needless_writes values ('${table}', '${column}'); end`,
        );
      }
    }
    return;
  }
  await connection.execute('create table needless_writes (table_name text, column_name text)');
  await connection.execute(
    "create function needless_write() returns trigger language plpgsql as $$ begin insert into needless_writes values (TG_TABLE_NAME, TG_ARGV[0]); return null; end $$",
  );
  const columns = (await connection.execute(
    "select table_name, column_name from information_schema.columns where table_schema = current_schema() and table_name <> 'needless_writes' and table_name in (select table_name from information_schema.tables where table_schema = current_schema() and table_type = 'BASE TABLE')",
    [],
    'all',
  )) as Array<{ table_name: string; column_name: string }>;
  for (const { table_name: table, column_name: column } of columns) {
    const trigger = `nw_${table}_${column}`.slice(0, 63);
    await connection.execute(
      `create trigger "${trigger}" after update of "${column}" on "${table}" for each row when (old."${column}"::text is not distinct from new."${column}"::text) execute function needless_write('${column}')`,
    );
  }
}

/**
 * On SQLite the suite runs on better-sqlite3, whose Statement every statement passes through (the
 * SQL is the same on either driver: the ORM's and the prepared statements').
 */
const onHookableDriver = (db: TestDatabase): TestDatabase =>
  db.name === 'sqlite' ? { name: 'sqlite', create: async () => ({ adapter: sqliteDatabase({ path: ':memory:', driver: 'better-sqlite3' }), url: 'sqlite::memory:', drop: async () => undefined }) } : db;

describe.each(testDatabases().map(onHookableDriver))('what writes write on $name', (db) => {
  let t: OAuthTestHost;
  let app: AdminApp;
  let as: oauth.AuthorizationServer;
  let connection: RawConnection;

  beforeAll(async () => {
    t = await startOAuthHost(db, 'node', { auth: { principalCacheTtlMs: 0 } }, { modules: [projectsModule, documentsModule] });
    app = await t.createApp();
    as = await discover(t);
    connection = t.kernel.container.get(entityManagerServiceIdentifier).getConnection() as unknown as RawConnection;
    await hookDrivers(db, (connection as unknown as { getKnex(): { client: KnexClient } }).getKnex().client);
    await installNeedlessWriteTriggers(db, connection);
  });
  afterAll(async () => {
    for (const undo of restore.splice(0)) undo();
    await t?.close();
  });

  const needless = async () => {
    const rows = (await connection.execute('select table_name, column_name from needless_writes', [], 'all')) as Array<{ table_name: string; column_name: string }>;
    await connection.execute('delete from needless_writes', [], 'run');
    return rows.map((row) => `${row.table_name}.${row.column_name}`);
  };

  async function recorded<T>(work: () => Promise<T>): Promise<{ result: T; sql: string[] }> {
    recording = { sql: [] };
    try {
      return { result: await work(), sql: recording.sql };
    } finally {
      recording = null;
    }
  }

  it('a refresh grant writes no unchanged column, in at most 5 statements', async () => {
    const user = await t.register();
    const first = await exchange(as, app, await authorize(t, app, user.token));
    await needless();
    let refreshToken = first.refresh_token!;
    const counts: number[] = [];
    let report = '';
    for (let i = 0; i < 3; i++) {
      const { result, sql } = await recorded(() => t.form('/oauth/token', { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: app.client_id }));
      expect(result.status, result.text).toBe(200);
      refreshToken = result.body.refresh_token;
      counts.push(sql.length);
      report = sql.map((s, n) => `${n + 1}. ${s.slice(0, 160)}`).join('\n');
      expect(await needless(), report).toEqual([]);
    }
    // Background jobs can only add statements: the cheapest grant is the grant's own cost.
    // The lookup (app, token, family and user in one read), begin, claim the old token (the
    // family check folded in), insert the pair, commit.
    expect(Math.min(...counts), report).toBeLessThanOrEqual(5);
  });

  it('a document edit writes no unchanged column', async () => {
    const owner = await actor(t);
    const project = await createProject(t, owner.token);
    const created = await createDocument(t, owner.token, project.id, { content: doc(paragraph('p1', 'One'), paragraph('p2', 'Two')) });
    await needless();
    let base = created.content_hash;
    for (const text of ['Three', 'Four']) {
      await new Promise((resolve) => setTimeout(resolve, 5)); // updated_at moves by at least a millisecond
      const { result, sql } = await recorded(() =>
        t.request('POST', `/documents/${created.id}/edit`, {
          token: owner.token,
          body: { base_version: base, mode: 'commands', commands: [{ op: 'write', blockId: 'p1', content: text }] },
        }),
      );
      expect(result.status, result.text).toBe(200);
      base = result.body.version;
      expect(await needless(), sql.map((s, n) => `${n + 1}. ${s.slice(0, 160)}`).join('\n')).toEqual([]);
    }
    // A rename with the content unchanged, and a content update with the title unchanged.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const renamed = await t.request('POST', '/documents', { token: owner.token, body: { documentId: created.id, title: 'Renamed' } });
    expect(renamed.status, renamed.text).toBe(200);
    expect(await needless()).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    const replaced = await t.request('POST', '/documents', { token: owner.token, body: { documentId: created.id, content: doc(paragraph('p1', 'Five')), base_version: base } });
    expect(replaced.status, replaced.text).toBe(200);
    expect(await needless()).toEqual([]);
  });
});
