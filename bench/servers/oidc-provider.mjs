// The OAuth peer: oidc-provider 8 (panva/node-oidc-provider, the certified OpenID provider for
// Node) answering refresh-token grants for a public client, as Trellis's /oauth/token does:
// rotation on (each grant consumes the refresh token and issues a new one), PKCE public client
// (token_endpoint_auth_method none), no `openid` scope (so no ID token is signed; Trellis signs
// none either). Its default opaque access tokens are stored through the adapter.
//
// BENCH_OIDC_STORE=sqlite (default) keeps everything in a SQLite file through the small adapter
// below, with Trellis's durability settings (@trellis/db-sqlite: WAL journal, synchronous=FULL,
// busy_timeout 5000, one connection, the same sqlite3 driver); =memory uses oidc-provider's own
// in-memory adapter.
//
// BENCH_TOKENS=N mints N refresh tokens (a Grant and a RefreshToken each, through the provider's
// own models) before it listens and prints them in its ready line: the bench measures the grant,
// not the browser flow that would have issued them.
import { createRequire } from 'node:module';
import Provider from 'oidc-provider';
import { answerProbe } from './probe.mjs';
import { ready } from './ready.mjs';

const require = createRequire(import.meta.url);
const { BENCH_DB, BENCH_OIDC_STORE = 'sqlite', BENCH_TOKENS = '16' } = process.env;
const CLIENT_ID = 'bench-client';
const REDIRECT_URI = 'http://127.0.0.1:9/callback';

/** oidc-provider's adapter interface on one SQLite table: model, id, payload and the lookups. */
function sqliteAdapter(path) {
  const sqlite3 = require('sqlite3');
  const db = new sqlite3.Database(path);
  const run = (sql, params = []) => new Promise((resolve, reject) => db.run(sql, params, (error) => (error ? reject(error) : resolve())));
  const get = (sql, params = []) => new Promise((resolve, reject) => db.get(sql, params, (error, row) => (error ? reject(error) : resolve(row))));
  const ready = (async () => {
    await run('PRAGMA journal_mode = WAL');
    await run('PRAGMA synchronous = FULL');
    await run('PRAGMA busy_timeout = 5000');
    await run('CREATE TABLE IF NOT EXISTS oidc_model (model text NOT NULL, id text NOT NULL, payload text NOT NULL, grant_id text, user_code text, uid text, expires_at integer, PRIMARY KEY (model, id))');
    await run('CREATE INDEX IF NOT EXISTS oidc_model_grant ON oidc_model (grant_id)');
    await run('CREATE INDEX IF NOT EXISTS oidc_model_uid ON oidc_model (model, uid)');
    await run('CREATE INDEX IF NOT EXISTS oidc_model_user_code ON oidc_model (model, user_code)');
  })();
  const live = (row) => {
    if (!row) return undefined;
    if (row.expires_at !== null && row.expires_at < Date.now()) return undefined;
    return JSON.parse(row.payload);
  };
  return class SqliteAdapter {
    static ready = ready;
    constructor(model) {
      this.model = model;
    }
    async upsert(id, payload, expiresIn) {
      await run(
        'INSERT INTO oidc_model (model, id, payload, grant_id, user_code, uid, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (model, id) DO UPDATE SET payload = excluded.payload, grant_id = excluded.grant_id, user_code = excluded.user_code, uid = excluded.uid, expires_at = excluded.expires_at',
        [this.model, id, JSON.stringify(payload), payload.grantId ?? null, payload.userCode ?? null, payload.uid ?? null, expiresIn ? Date.now() + expiresIn * 1000 : null],
      );
    }
    async find(id) {
      return live(await get('SELECT payload, expires_at FROM oidc_model WHERE model = ? AND id = ?', [this.model, id]));
    }
    async findByUserCode(userCode) {
      return live(await get('SELECT payload, expires_at FROM oidc_model WHERE model = ? AND user_code = ?', [this.model, userCode]));
    }
    async findByUid(uid) {
      return live(await get('SELECT payload, expires_at FROM oidc_model WHERE model = ? AND uid = ?', [this.model, uid]));
    }
    async consume(id) {
      await run("UPDATE oidc_model SET payload = json_set(payload, '$.consumed', ?) WHERE model = ? AND id = ?", [Math.floor(Date.now() / 1000), this.model, id]);
    }
    async destroy(id) {
      await run('DELETE FROM oidc_model WHERE model = ? AND id = ?', [this.model, id]);
    }
    async revokeByGrantId(grantId) {
      await run('DELETE FROM oidc_model WHERE grant_id = ?', [grantId]);
    }
  };
}

const Adapter = BENCH_OIDC_STORE === 'sqlite' ? sqliteAdapter(`${BENCH_DB}.oidc`) : undefined;
await Adapter?.ready;
const provider = new Provider('http://127.0.0.1', {
  ...(Adapter ? { adapter: Adapter } : {}),
  clients: [{ client_id: CLIENT_ID, token_endpoint_auth_method: 'none', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], redirect_uris: [REDIRECT_URI] }],
  scopes: ['offline_access', 'profile:read'],
  rotateRefreshToken: true,
  cookies: { keys: ['bench-cookie-key-bench-cookie-key'] },
  ttl: { AccessToken: 3600, Grant: 14 * 86400, RefreshToken: 14 * 86400 },
  features: { devInteractions: { enabled: false } },
  findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
  pkce: { required: () => true },
});
// No logging of every grant (the peer would otherwise write a line per request).
provider.on('server_error', (_ctx, error) => console.error('oidc-provider server_error', error));

const client = await provider.Client.find(CLIENT_ID);
const tokens = [];
for (let i = 0; i < Number(BENCH_TOKENS); i++) {
  const accountId = `account-${i}`;
  const grant = new provider.Grant({ accountId, clientId: CLIENT_ID });
  grant.addOIDCScope('offline_access profile:read');
  const grantId = await grant.save();
  const refresh = new provider.RefreshToken({ accountId, client, grantId, scope: 'offline_access profile:read', gty: 'authorization_code', expiresWithSession: false });
  tokens.push(await refresh.save());
}

answerProbe();
const server = provider.listen(0, '127.0.0.1', () => ready(server.address().port, { clientId: CLIENT_ID, tokens, store: BENCH_OIDC_STORE }));
process.on('SIGTERM', () => process.exit(0));
