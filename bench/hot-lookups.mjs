#!/usr/bin/env node
// In-process cost of the hot-path lookups, per SQLite driver: the user behind a credential read
// through the ORM (em.fork().findOne, as before) and through the prepared statement (as now), and
// a whole uncached credential check (Authenticator.authenticate: JWT + user). Interleaved rounds,
// medians, microseconds per call. A quieter signal than HTTP load on a busy machine.
//
//   pnpm build && node bench/hot-lookups.mjs [--calls 3000] [--rounds 5]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { authenticatorServiceIdentifier, coreModules, createKernel, JwtService, preparedStatementsServiceIdentifier, sqlStatement, User, UserService } from '@trellis/core';
import { sqliteDatabase } from '@trellis/db-sqlite';
import { pino } from 'pino';

const { values: args } = parseArgs({ options: { calls: { type: 'string', default: '3000' }, rounds: { type: 'string', default: '5' } } });
const calls = Number(args.calls);
const rounds = Number(args.rounds);
const dir = mkdtempSync(join(tmpdir(), 'trellis-lookups-'));
const byId = sqlStatement('bench.user_by_id', 'select "id", "email", "name", "status", "created_at", "updated_at" from "users" where "id" = ?');

async function setup(driver) {
  const kernel = createKernel({
    database: sqliteDatabase({ path: join(dir, `${driver}.db`), driver }),
    modules: coreModules,
    logger: pino({ level: 'silent' }),
    config: { auth: { jwtSecret: 'bench-secret-bench-secret-bench-secret-0123', principalCacheTtlMs: 0 } },
  });
  await kernel.start({ jobs: false });
  const user = await kernel.get(UserService).create(kernel.fork(), { email: `u-${driver}@example.com`, password: null });
  const userId = user.id;
  const { token } = await kernel.get(JwtService).sign(userId);
  return { kernel, token, userId };
}

const time = async (work) => {
  const start = performance.now();
  for (let i = 0; i < calls; i++) await work();
  return ((performance.now() - start) * 1000) / calls;
};

const setups = {};
for (const driver of ['better-sqlite3', 'sqlite3']) setups[driver] = await setup(driver);
const samples = {};
for (let round = 0; round < rounds; round++) {
  for (const driver of Object.keys(setups)) {
    const { kernel, token, userId } = setups[driver];
    const sql = kernel.get(preparedStatementsServiceIdentifier);
    const cases = {
      'ORM em.fork().findOne(User)': () => kernel.fork().findOne(User, { id: userId }),
      'prepared statement': () => sql.first(byId, [userId]),
      'authenticate (JWT + user, uncached)': () => kernel.get(authenticatorServiceIdentifier).authenticate(token, { ip: '127.0.0.1', userAgent: 'bench' }),
    };
    for (const [name, work] of Object.entries(cases)) (samples[`${name} | ${driver}`] ??= []).push(await time(work));
  }
}
const median = (list) => [...list].sort((a, b) => a - b)[Math.floor(list.length / 2)];
for (const [key, list] of Object.entries(samples)) console.log(`${key.padEnd(60)} ${median(list).toFixed(1).padStart(8)} us/call`);
for (const driver of Object.keys(setups)) {
  const orm = median(samples[`ORM em.fork().findOne(User) | ${driver}`]);
  const prepared = median(samples[`prepared statement | ${driver}`]);
  console.log(`${driver}: prepared statement ${(orm / prepared).toFixed(1)}x faster than the ORM lookup`);
}
for (const setup of Object.values(setups)) await setup.kernel.stop();
rmSync(dir, { recursive: true, force: true });
