// Writes for the benchmarks, so that every measured server is in the state real servers are in
// (issue #14): a fresh SQLite database with a measured user, a writer user (site admin, so it can
// register an OAuth app), a document and an OAuth refresh token; then a side client that sends
// logins, document edits and refresh-token grants to a server before and during the measured load.
// The writes touch the writer user only: what the measured user's GET /auth/me answers never
// changes.
//
// Against a peer (Fastify) the same side client sends the equivalent requests: a login (Argon2id
// verification and a JWT) and writes through the peer's ORM (see servers/fastify-me.mjs).
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { URLSearchParams } from 'node:url';

export const BENCH_JWT_SECRET = 'bench-secret-bench-secret-bench-secret-0123';
export const PASSWORD = 'correct horse battery';
/** Throttling is measured elsewhere: the bench servers allow the side client's logins. */
export const relaxedAuth = { rateLimit: { perIp: 1_000_000_000, perAccount: 1_000_000_000 } };
const REDIRECT_URI = 'http://127.0.0.1:9/callback';

/**
 * Migrates a fresh SQLite database and fills it through a Trellis host started in this process
 * (then stopped): the measured user, the writer, an OAuth app with a refresh token, a document.
 */
export async function prepareTrellisDatabase(path = join(mkdtempSync(join(tmpdir(), 'trellis-bench-')), 'bench.db')) {
  const { UserService } = await import('@trellis/core');
  const { createHost } = await import('@trellis/host');
  const host = createHost({
    config: {
      server: { host: '127.0.0.1', port: 0, transport: 'node' },
      database: { url: `sqlite:${path}` },
      auth: { jwtSecret: BENCH_JWT_SECRET, ...relaxedAuth },
      oauth: { rateLimit: { perIp: 1_000_000_000, perClient: 1_000_000_000 } },
      log: { level: 'silent' },
    },
  });
  await host.start();
  try {
    const base = host.url;
    const measured = await json(base, 'POST', '/auth/register', { body: { email: 'bench@example.com', password: PASSWORD } }, 201);
    const writer = await json(base, 'POST', '/auth/register', { body: { email: 'writer@example.com', password: PASSWORD } }, 201);
    await host.kernel.get(UserService).update(host.kernel.fork(), writer.user.id, { isSiteAdmin: true });
    const app = await json(base, 'POST', '/admin/oauth-apps', { token: writer.token, body: { name: 'Bench app', description: 'Refresh grants for the benchmarks', redirect_uris: [REDIRECT_URI], scopes: ['profile:read'] } }, 201);
    const refreshToken = await authorizationCodeGrant(base, app.client_id, writer.token);
    const project = await json(base, 'POST', '/project', { token: writer.token, body: { name: 'Bench project', tools: [], access: 'team' } }, 201);
    const document = await json(base, 'POST', '/documents', { token: writer.token, body: { projectId: project.id, title: 'Bench', content: { type: 'doc', content: [{ type: 'paragraph', attrs: { id: 'p' }, content: [{ type: 'text', text: 'edit 0' }] }] } } }, 201);
    return {
      path,
      token: measured.token,
      userId: measured.user.id,
      writer: { email: 'writer@example.com', token: writer.token, userId: writer.user.id },
      oauth: { clientId: app.client_id, refreshToken },
      document: { id: document.id, version: document.content_hash, edits: 0 },
    };
  } finally {
    await host.stop();
  }
}

/** The browser part of an authorization-code flow with PKCE, then the code exchange: a refresh token. */
export async function authorizationCodeGrant(base, clientId, userToken) {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const params = { client_id: clientId, redirect_uri: REDIRECT_URI, scope: 'profile:read', state: 'bench-state', code_challenge: challenge, code_challenge_method: 'S256' };
  const confirmed = await json(base, 'POST', '/oauth/authorize', { token: userToken, body: params }, 200);
  const code = new URL(confirmed.redirectTo).searchParams.get('code');
  const tokens = await json(base, 'POST', '/oauth/token', { form: { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, client_id: clientId, code_verifier: verifier } }, 200);
  return tokens.refresh_token;
}

/** One HTTP request; throws unless it answers `status`. Answers the parsed body. */
export async function json(base, method, path, { token, body, form } = {}, status = 200) {
  const headers = {};
  if (token) headers.authorization = `Bearer ${token}`;
  let payload;
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = JSON.stringify(body);
  } else if (form !== undefined) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    payload = new URLSearchParams(form).toString();
  }
  const response = await fetch(`${base}${path}`, { method, headers, body: payload, redirect: 'manual' });
  const text = await response.text();
  if (response.status !== status) throw new Error(`${method} ${path} answered ${response.status} (wanted ${status}): ${text.slice(0, 300)}`);
  return text ? JSON.parse(text) : undefined;
}

/**
 * One write of each kind, in turn: a login, a document edit (str_replace), a refresh-token grant.
 * `kind` 'trellis' sends Trellis's requests; 'peer' sends the Fastify peer's equivalents.
 */
export function writeOnce(base, state, kind, n) {
  const which = n % 3;
  if (kind === 'peer') {
    if (which === 0) return json(base, 'POST', '/auth/login', { body: { email: state.writer.email, password: PASSWORD } });
    return json(base, 'POST', '/write', { body: { userId: state.writer.userId, n } });
  }
  if (which === 0) return json(base, 'POST', '/auth/login', { body: { email: state.writer.email, password: PASSWORD } });
  if (which === 1) {
    const from = `edit ${state.document.edits}`;
    const to = `edit ${state.document.edits + 1}`;
    return json(base, 'POST', `/documents/${state.document.id}/edit`, {
      token: state.writer.token,
      body: { base_version: state.document.version, mode: 'commands', commands: [{ op: 'str_replace', blockId: 'p', old_str: from, new_str: to }] },
    }).then((r) => {
      state.document.version = r.version;
      state.document.edits++;
    });
  }
  return json(base, 'POST', '/oauth/token', { form: { grant_type: 'refresh_token', refresh_token: state.oauth.refreshToken, client_id: state.oauth.clientId } }).then((r) => {
    state.oauth.refreshToken = r.refresh_token;
  });
}

/** `count` writes, one after another (before the measured load). */
export async function writeBurst(base, state, kind, count = 9) {
  for (let n = 0; n < count; n++) await writeOnce(base, state, kind, n);
}

/**
 * Writes at `perSecond` (one at a time, never overlapping) until `stop()`, which waits for the
 * write under way and answers how many were sent and how many failed.
 */
export function startWriter(base, state, kind, perSecond = 6) {
  let stopped = false;
  let sent = 0;
  let failed = 0;
  let lastError;
  const interval = 1000 / perSecond;
  const done = (async () => {
    let n = 0;
    while (!stopped) {
      const started = Date.now();
      try {
        await writeOnce(base, state, kind, n++);
        sent++;
      } catch (error) {
        failed++;
        lastError = error;
      }
      const wait = interval - (Date.now() - started);
      if (wait > 0 && !stopped) await new Promise((resolve) => setTimeout(resolve, wait));
    }
  })();
  return {
    async stop() {
      stopped = true;
      await done;
      if (failed && lastError) console.warn(`! ${failed} side writes failed; the last: ${lastError.message}`);
      return { sent, failed };
    },
  };
}
