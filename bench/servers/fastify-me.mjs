// The Fastify 5 peer of Trellis's GET /auth/me, doing the same work per request, uncached:
//   1. take the bearer token from `Authorization: Bearer <jwt>` (401 without one);
//   2. verify it with jose's jwtVerify, HS256, the same secret and issuer as Trellis (401 if bad);
//   3. load the user by `sub` through MikroORM 6.6 with the same User entity (UserSchema from
//      @trellis/core), the same SQLite driver and options (@trellis/db-sqlite's ormOptions,
//      WAL) and the same database file, in a fresh em.fork() per request (401 if missing or
//      disabled);
//   4. answer the same JSON as Trellis: { user, credential: { kind: 'jwt' } }, user shaped by
//      Trellis's own toPrincipalUser.
// What it does not do that Trellis does: request ids, CORS, the route table and error catalogue,
// the in-process principal cache (it has none; compare it with Trellis at principalCacheTtlMs 0).
import { MikroORM } from '@mikro-orm/core';
import { toPrincipalUser, UserSchema } from '@trellis/core';
import { sqliteDatabase } from '@trellis/db-sqlite';
import Fastify from 'fastify';
import { jwtVerify } from 'jose';
import { ready } from './ready.mjs';

const { BENCH_DB, BENCH_JWT_SECRET, BENCH_JWT_ISSUER = 'trellis' } = process.env;
const database = sqliteDatabase({ path: BENCH_DB });
const orm = await MikroORM.init({
  ...database.ormOptions([]),
  entities: [UserSchema],
  discovery: { warnWhenNoEntities: false },
  allowGlobalContext: false,
  forceUtcTimezone: true,
});
await database.afterConnect?.(orm);
const secret = new TextEncoder().encode(BENCH_JWT_SECRET);
const unauthorized = (reply, error) => reply.code(401).header('www-authenticate', 'Bearer').send({ error, message: 'Unauthorized.' });

const app = Fastify({ logger: false });
app.get('/auth/me', async (request, reply) => {
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(request.headers.authorization ?? '');
  if (!match) return unauthorized(reply, 'missing_credentials');
  let claims;
  try {
    ({ payload: claims } = await jwtVerify(match[1], secret, { issuer: BENCH_JWT_ISSUER, algorithms: ['HS256'] }));
  } catch {
    return unauthorized(reply, 'invalid_token');
  }
  const user = await orm.em.fork().findOne(UserSchema, { id: claims.sub });
  if (!user || user.status !== 'active') return unauthorized(reply, 'invalid_token');
  return { user: toPrincipalUser(user), credential: { kind: 'jwt' } };
});
await app.listen({ port: 0, host: '127.0.0.1' });
ready(app.server.address().port);
process.on('SIGTERM', () => process.exit(0));
