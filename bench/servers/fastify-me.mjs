// The Fastify 5 peer of Trellis's GET /auth/me, doing the same work per request, uncached:
//   1. take the bearer token from `Authorization: Bearer <jwt>` (401 without one);
//   2. verify it with jose's jwtVerify, HS256, the same secret and issuer as Trellis (401 if bad);
//   3. load the user by `sub` through MikroORM 6.6 with the same User entity (UserSchema from
//      @trellis/core), the same SQLite driver and options (@trellis/db-sqlite's ormOptions,
//      WAL) and the same database file, in a fresh em.fork() per request (401 if missing or
//      disabled);
//   4. load the user's team memberships with their teams (one more query, as Trellis's
//      TeamService.listForUser does) and answer the same JSON as Trellis:
//      { user, teams, credential: { kind: 'jwt' } }, shaped by Trellis's own toPrincipalUser and
//      toTeamView.
// What it does not do that Trellis does: request ids, CORS, the route table and error catalogue,
// the in-process principal cache (it has none; compare it with Trellis at principalCacheTtlMs 0).
//
// Like the Trellis servers it also takes the side client's writes, the way a Fastify + MikroORM
// application does them (so it is in the state such a server is in after its first write):
//   POST /auth/login  Argon2id verification of the stored hash (same library and cost as Trellis),
//                     then a JWT signed with jose;
//   POST /write       loads a user in a fresh em.fork(), changes its name and flushes (MikroORM's
//                     own flush, which enters its AsyncLocalStorage: promise hooks come on).
import { MikroORM } from '@mikro-orm/core';
import { TeamMemberSchema, TeamSchema, toPrincipalUser, toTeamView, UserSchema } from '@trellis/core';
import { sqliteDatabase } from '@trellis/db-sqlite';
import Fastify from 'fastify';
import { verify } from '@node-rs/argon2';
import { jwtVerify, SignJWT } from 'jose';
import { answerProbe } from './probe.mjs';
import { ready } from './ready.mjs';

const { BENCH_DB, BENCH_JWT_SECRET, BENCH_JWT_ISSUER = 'trellis' } = process.env;
const database = sqliteDatabase({ path: BENCH_DB });
const orm = await MikroORM.init({
  ...database.ormOptions([]),
  entities: [UserSchema, TeamSchema, TeamMemberSchema],
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
  const em = orm.em.fork();
  const user = await em.findOne(UserSchema, { id: claims.sub });
  if (!user || user.status !== 'active') return unauthorized(reply, 'invalid_token');
  const memberships = await em.find(TeamMemberSchema, { user: user.id }, { populate: ['team'] });
  memberships.sort((a, b) => Number(b.team.personal) - Number(a.team.personal) || a.team.createdAt.getTime() - b.team.createdAt.getTime() || a.team.id.localeCompare(b.team.id));
  return { user: toPrincipalUser(user), teams: memberships.map((m) => toTeamView(m.team, m.role)), credential: { kind: 'jwt' } };
});
app.post('/auth/login', async (request, reply) => {
  const { email, password } = request.body ?? {};
  const user = await orm.em.fork().findOne(UserSchema, { email: String(email).toLowerCase() });
  if (!user?.passwordHash || !(await verify(user.passwordHash, String(password)))) return unauthorized(reply, 'invalid_credentials');
  const token = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(user.id).setIssuer(BENCH_JWT_ISSUER).setIssuedAt().setExpirationTime('1h').sign(secret);
  return { token, tokenType: 'Bearer', user: toPrincipalUser(user) };
});
app.post('/write', async (request) => {
  const em = orm.em.fork();
  const user = await em.findOneOrFail(UserSchema, { id: request.body.userId });
  user.name = `writer ${request.body.n}`;
  await em.flush();
  return { written: true };
});
answerProbe();
await app.listen({ port: 0, host: '127.0.0.1' });
ready(app.server.address().port);
process.on('SIGTERM', () => process.exit(0));
