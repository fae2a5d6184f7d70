import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { entityManagerServiceIdentifier, preparedStatementsServiceIdentifier, sqlRowTable, sqlStatement } from '@trellis/core';
import { startTestKernel, testDatabases, type TestKernel } from '@trellis/test-support';
import { RunEvent } from '../src/modules/runs/entities/run-event.entity.js';
import { GroupCommit, RunAlone } from '../src/kernel/group-commit.js';

/**
 * The runs' group commit on a real database: units that arrive together share one transaction on
 * SQLite (one commit, one multi-row INSERT of their deferred rows), each caller hears of its own
 * unit only once it is committed, and a unit that fails takes nothing of the others with it. On
 * PostgreSQL, not grouped, every unit is a transaction of its own, with the same answers; grouped
 * (the runs' writes of a team's balance), as on SQLite, with lone writes while few are under way.
 * Concurrent units of a group run at the same time, their statements interleaved on the one
 * connection.
 */

describe.each(testDatabases())('group commit on $name', (db) => {
  let t: TestKernel;
  let root: EntityManager;
  let sql: string[] = [];

  beforeAll(async () => {
    t = await startTestKernel(db);
    root = t.kernel.container.get(entityManagerServiceIdentifier);
    const knex = (root.getConnection() as unknown as { getKnex(): { on(event: 'query', listener: (query: { sql: string }) => void): void } }).getKnex();
    knex.on('query', (query) => sql.push(query.sql));
  });
  afterAll(() => t?.close());

  const group = () => new GroupCommit(() => root.fork(), db.name === 'sqlite', t.kernel.container.get(preparedStatementsServiceIdentifier));
  const row = (runId: string, seq = 1): RunEvent => ({ runId, seq, lastSeq: seq, events: [{ seq, type: 'test', data: { runId } }], createdAt: new Date() });
  // The log's table, as the runs' event sink writes it.
  const eventRows = sqlRowTable('test.run_event_rows', '"run_events" ("run_id", "seq", "last_seq", "events", "created_at")', '(?, ?, ?, ?, ?)', 4);
  const values = (runId: string, seq = 1) => [runId, seq, seq, JSON.stringify([{ seq, type: 'test', data: { runId } }]), new Date()];
  const stored = async (runIds: string[]) => (await root.fork().find(RunEvent, { runId: { $in: runIds } })).map((r) => r.runId).sort();

  it('writes a lone statement (insertOne, runOne) with no transaction of its own on PostgreSQL, in a group on SQLite', async () => {
    const commits = group();
    const ids = Array.from({ length: 12 }, () => randomUUID());
    sql = [];
    await Promise.all(ids.map((id) => commits.insertOne(eventRows, values(id))));
    expect(await stored(ids)).toEqual([...ids].sort());
    const begins = sql.filter((s) => /^begin/i.test(s)).length;
    // SQLite: the first write starts a transaction alone, the rest share the next; PostgreSQL: none.
    if (db.name === 'sqlite') expect(begins).toBeLessThanOrEqual(2);
    else expect(begins).toBe(0);
    // runOne answers the rows the statement changed, once committed.
    sql = [];
    const update = sqlStatement('test.run_event_touch', 'update "run_events" set "last_seq" = ? where "run_id" = ?');
    expect(await commits.runOne(update, [5, ids[0]!])).toBe(1);
    expect(await commits.runOne(update, [5, randomUUID()])).toBe(0);
    expect(sql.filter((s) => /^begin/i.test(s)).length).toBe(db.name === 'sqlite' ? 2 : 0);
    expect((await root.fork().findOneOrFail(RunEvent, { runId: ids[0]! })).lastSeq).toBe(5);
  });

  it('commits units that arrive together at once, with their rows in one INSERT (SQLite), and answers each', async () => {
    const commits = group();
    const ids = Array.from({ length: 12 }, () => randomUUID());
    sql = [];
    const answers = await Promise.all(
      ids.map((id, i) =>
        commits.run(async (tx, _alone, rows) => {
          await rows.insertRow(tx, eventRows, values(id));
          return i;
        }),
      ),
    );
    expect(answers).toEqual(ids.map((_, i) => i));
    expect(await stored(ids)).toEqual([...ids].sort());
    const begins = sql.filter((s) => /^begin/i.test(s)).length;
    const inserts = sql.filter((s) => /^insert into .run_events./i.test(s)).length;
    if (db.name === 'sqlite') {
      // The first unit starts a transaction alone; the eleven that queued meanwhile share the next.
      expect(begins).toBeLessThanOrEqual(2);
      expect(inserts).toBeLessThanOrEqual(2);
    } else {
      expect(begins).toBe(12);
    }
  });

  it('rolls back a unit that fails halfway and keeps the units grouped with it', async () => {
    const commits = group();
    const [a, broken, c] = [randomUUID(), randomUUID(), randomUUID()];
    const results = await Promise.allSettled([
      commits.run((tx, _alone, rows) => rows.insertRow(tx, eventRows, values(a))),
      commits.run(async (tx) => {
        await tx.insert(RunEvent, row(broken));
        throw new Error('halfway');
      }),
      commits.run((tx, _alone, rows) => rows.insertRow(tx, eventRows, values(c))),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ message: 'halfway' });
    expect(await stored([a, broken, c])).toEqual([a, c].sort());
  });

  it('keeps the group going past an atomic unit that failed, and finds the unit whose rows break the INSERT', async () => {
    const commits = group();
    const [a, b, taken] = [randomUUID(), randomUUID(), randomUUID()];
    await commits.run((tx) => tx.insert(RunEvent, row(taken)));
    sql = [];
    const results = await Promise.allSettled([
      commits.run((tx, _alone, rows) => rows.insertRow(tx, eventRows, values(a))),
      commits.run(
        async () => {
          throw new Error('refused before writing');
        },
        { atomic: true },
      ),
      // A row that is already stored: the shared INSERT fails, each unit goes again alone.
      commits.run((tx, _alone, rows) => rows.insertRow(tx, eventRows, values(taken))),
      commits.run((tx, _alone, rows) => rows.insertRow(tx, eventRows, values(b, 2))),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ message: 'refused before writing' });
    expect(await stored([a, b])).toEqual([a, b].sort());
  });
  it('runs concurrent units at the same time in one transaction (SQLite), and answers each once committed', async () => {
    const commits = group();
    const ids = Array.from({ length: 8 }, () => randomUUID());
    let running = 0;
    let most = 0;
    sql = [];
    const answers = await Promise.all(
      ids.map((id, i) =>
        commits.run(
          async (tx) => {
            most = Math.max(most, ++running);
            await tx.insert(RunEvent, row(id, 1));
            await tx.insert(RunEvent, row(id, 2));
            running--;
            return i;
          },
          { concurrent: true },
        ),
      ),
    );
    expect(answers).toEqual(ids.map((_, i) => i));
    expect((await root.fork().find(RunEvent, { runId: { $in: ids } })).length).toBe(16);
    // Several units had statements under way at once (on PostgreSQL too: a transaction each).
    expect(most).toBeGreaterThan(1);
    if (db.name === 'sqlite') expect(sql.filter((s) => /^begin/i.test(s)).length).toBeLessThanOrEqual(2);
  });

  it('runs a unit that is not concurrent alone, after the concurrent units before it', async () => {
    const commits = group();
    let running = 0;
    let seenByLone = -1;
    const concurrent = (id: string) =>
      commits.run(
        async (tx) => {
          running++;
          await tx.insert(RunEvent, row(id));
          running--;
        },
        { concurrent: true },
      );
    const ids = Array.from({ length: 5 }, () => randomUUID());
    await Promise.all([
      concurrent(ids[0]!),
      concurrent(ids[1]!),
      commits.run(async (tx, alone) => {
        expect(alone).toBe(true);
        seenByLone = running;
        await tx.insert(RunEvent, row(ids[2]!));
      }),
      concurrent(ids[3]!),
      concurrent(ids[4]!),
    ]);
    if (db.name === 'sqlite') expect(seenByLone).toBe(0);
    expect(await stored(ids)).toEqual([...ids].sort());
  });

  it('runs a concurrent unit that throws RunAlone again, alone, and answers its caller from there', async () => {
    const commits = group();
    const [a, b, lone] = [randomUUID(), randomUUID(), randomUUID()];
    const calls: boolean[] = [];
    const others = (id: string) => commits.run((tx) => tx.insert(RunEvent, row(id)), { concurrent: true });
    const results = await Promise.all([
      others(a),
      commits.run(
        async (tx, alone) => {
          calls.push(alone);
          if (!alone) throw new RunAlone();
          await tx.insert(RunEvent, row(lone));
          return 'alone';
        },
        { concurrent: true },
      ),
      others(b),
    ]);
    expect(results[1]).toBe('alone');
    // On SQLite it first ran among the others and asked to go alone; on PostgreSQL a unit is always alone.
    expect(calls).toEqual(db.name === 'sqlite' ? [false, true] : [true]);
    expect(await stored([a, b, lone])).toEqual([a, b, lone].sort());
  });

  it('rolls the group back when a concurrent unit fails halfway, and runs every unit again alone', async () => {
    const commits = group();
    const [a, broken, c] = [randomUUID(), randomUUID(), randomUUID()];
    const results = await Promise.allSettled([
      commits.run((tx) => tx.insert(RunEvent, row(a)), { concurrent: true }),
      commits.run(
        async (tx) => {
          await tx.insert(RunEvent, row(broken));
          throw new Error('halfway');
        },
        { concurrent: true },
      ),
      commits.run((tx) => tx.insert(RunEvent, row(c)), { concurrent: true }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((results[1] as PromiseRejectedResult).reason).toMatchObject({ message: 'halfway' });
    expect(await stored([a, broken, c])).toEqual([a, c].sort());
  });
  it('inserts the rows of insertRow with one statement per table at the end of a group (SQLite), and at once otherwise', async () => {
    const commits = group();
    const ids = Array.from({ length: 10 }, () => randomUUID());
    sql = [];
    await Promise.all(ids.map((id) => commits.run(async (tx, _alone, rows) => {
      await rows.insertRow(tx, eventRows, values(id, 1));
      await rows.insertRow(tx, eventRows, values(id, 2));
    }, { concurrent: true })));
    expect((await root.fork().find(RunEvent, { runId: { $in: ids } })).length).toBe(20);
    // Outside a group (a transaction of its own), the row goes in at once.
    const alone = randomUUID();
    const tx = root.fork();
    await tx.begin();
    await commits.insertRow(tx, eventRows, values(alone, 1));
    await tx.commit();
    expect(await stored([alone])).toEqual([alone]);
    await expect(commits.insertRow(root.fork(), eventRows, [alone])).rejects.toThrow(/has 5 values, not 1/);
  });

  it('runs every unit again alone when the rows of insertRow break the insert, and fails only the unit that wrote the bad row', async () => {
    const commits = group();
    const [a, taken, b] = [randomUUID(), randomUUID(), randomUUID()];
    await commits.run((tx, _alone, rows) => rows.insertRow(tx, eventRows, values(taken)));
    const results = await Promise.allSettled([a, taken, b].map((id) => commits.run((tx, _alone, rows) => rows.insertRow(tx, eventRows, values(id)), { concurrent: true })));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(await stored([a, b])).toEqual([a, b].sort());
  });

  it('drops the rows a unit deferred when it fails, atomically or asking to run alone, and writes the others\'', async () => {
    const commits = group();
    const [a, refused, lone, b] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const results = await Promise.allSettled([
      commits.run((tx, _alone, rows) => rows.insertRow(tx, eventRows, values(a)), { concurrent: true }),
      commits.run(
        async (tx, _alone, rows) => {
          await rows.insertRow(tx, eventRows, values(refused));
          throw new Error('refused after deferring');
        },
        { atomic: true, concurrent: true },
      ),
      commits.run(
        async (tx, alone, rows) => {
          // Its first try defers a row and asks to go alone: only the second try's row is stored.
          await rows.insertRow(tx, eventRows, values(lone, alone ? 2 : 1));
          if (!alone) throw new RunAlone();
        },
        { concurrent: true },
      ),
      commits.run((tx, _alone, rows) => rows.insertRow(tx, eventRows, values(b)), { concurrent: true }),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(await stored([a, refused, b])).toEqual([a, b].sort());
    const loneRows = await root.fork().find(RunEvent, { runId: lone });
    expect(loneRows.map((r) => r.seq)).toEqual([2]);
  });

  it('refuses a row given to the group itself inside a group, and stores it when the unit runs again alone', async () => {
    const commits = group();
    const id = randomUUID();
    const attempts: string[] = [];
    await commits.run(async (tx) => {
      try {
        await commits.insertRow(tx, eventRows, values(id));
        attempts.push('inserted');
      } catch (error) {
        attempts.push((error as Error).message);
        throw error;
      }
    });
    // In the group's transaction nobody would own the row: refused, the group goes again unit by unit.
    expect(attempts).toEqual(db.name === 'sqlite' ? [expect.stringMatching(/through the `rows` its work is given/), 'inserted'] : ['inserted']);
    expect(await stored([id])).toEqual([id]);
  });

  it('runs the writes of atEnd after the unit, just before its commit (PostgreSQL), at once otherwise, and rolls the unit back when one fails', async () => {
    const commits = group();
    const ids = [randomUUID(), randomUUID()];
    const order: string[] = [];
    const answer = await commits.run(async (tx) => {
      await commits.atEnd(tx, async () => {
        order.push('last');
        await tx.insertMany(RunEvent, [row(ids[0]!)]);
      });
      order.push('work');
      await tx.insertMany(RunEvent, [row(ids[1]!)]);
      return 'answer';
    });
    expect(answer).toBe('answer');
    // Grouped (SQLite), atEnd runs at once: only PostgreSQL's units put it off.
    expect(order).toEqual(db.name === 'sqlite' ? ['last', 'work'] : ['work', 'last']);
    expect(await stored(ids)).toEqual([...ids].sort());

    // A write put off that fails fails its unit: nothing of the unit is stored.
    const failed = [randomUUID(), randomUUID()];
    await expect(
      commits.run(async (tx) => {
        await tx.insertMany(RunEvent, [row(failed[0]!)]);
        await commits.atEnd(tx, async () => {
          await tx.insertMany(RunEvent, [row(failed[1]!)]);
          throw new Error('the last write failed');
        });
      }),
    ).rejects.toThrow(/the last write failed/);
    expect(await stored(failed)).toEqual([]);

    // Outside a unit of this group: at once.
    let ran = false;
    await commits.atEnd(root.fork(), async () => {
      ran = true;
    });
    expect(ran).toBe(true);
  });

  describe('grouped on either database (the runs group the writes of a team\'s balance on PostgreSQL too)', () => {
    // As the stores make them: PostgreSQL's units one statement at a time (`interleave` false).
    const grouped = () => new GroupCommit(() => root.fork(), true, t.kernel.container.get(preparedStatementsServiceIdentifier), db.name === 'sqlite');
    const insertEvent = sqlStatement('test.run_event_insert', 'insert into "run_events" ("run_id", "seq", "last_seq", "events", "created_at") values (?, ?, ?, ?, ?)');
    const broken = sqlStatement('test.no_such_table', 'insert into "no_such_table_here" ("id") values (?)');
    const prepared = () => t.kernel.container.get(preparedStatementsServiceIdentifier);
    /** A promise and the functions that settle it. */
    const deferred = <T>() => {
      let resolve!: (value: T) => void;
      let reject!: (error: unknown) => void;
      const promise = new Promise<T>((yes, no) => ((resolve = yes), (reject = no)));
      return { promise, resolve, reject };
    };

    it('does not answer a unit as committed when a statement of an atomic unit after it failed (PostgreSQL then rolls the transaction back at COMMIT)', async () => {
      const commits = grouped();
      const [kept, other] = [randomUUID(), randomUUID()];
      const results = await Promise.allSettled([
        commits.run((tx) => prepared().run(insertEvent, values(kept), tx)),
        // Fails with a statement error, writing nothing: atomic. It is the group's last statement.
        commits.run((tx) => prepared().run(broken, [1], tx), { atomic: true }),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
      // Every unit answered as written is stored (on PostgreSQL the group runs again, each unit alone).
      expect(await stored([kept])).toEqual([kept]);
      // And the group commit goes on.
      await commits.run((tx) => prepared().run(insertEvent, values(other), tx));
      expect(await stored([other])).toEqual([other]);
    });

    it('writes a unit through its lone write when no group is under way, with no transaction', async () => {
      const commits = grouped();
      const id = randomUUID();
      sql = [];
      const answer = await commits.run(
        async () => {
          throw new Error('the group is not used');
        },
        {},
        async () => {
          await prepared().run(insertEvent, values(id));
          return { value: 'lone' };
        },
      );
      expect(answer).toBe('lone');
      expect(sql.filter((s) => /^begin/i.test(s))).toEqual([]);
      expect(await stored([id])).toEqual([id]);
    });

    it('queues the units that arrive past the lone writes under way, and commits them in one group once those ended', async () => {
      const commits = grouped();
      const lones = Array.from({ length: 4 }, () => ({ id: randomUUID(), gate: deferred<void>() }));
      const queued = Array.from({ length: 3 }, () => randomUUID());
      const events: string[] = [];
      sql = [];
      const loneAnswers = lones.map(({ id, gate }) =>
        commits.run(
          async () => {
            throw new Error('the group is not used');
          },
          {},
          async () => {
            await gate.promise;
            await prepared().run(insertEvent, values(id));
            events.push(`lone ${id}`);
            return { value: id };
          },
        ),
      );
      // Four lone writes are under way: the next units queue, lone writes or not.
      const queuedAnswers = queued.map((id) =>
        commits.run(
          async (tx, _alone, rows) => {
            await rows.insertRow(tx, eventRows, values(id));
            events.push(`group ${id}`);
            return id;
          },
          { concurrent: true },
          async () => {
            throw new Error('a queued unit is not written alone');
          },
        ),
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(events).toEqual([]);
      expect(sql.filter((s) => /^begin/i.test(s))).toEqual([]);
      // The group starts when the last lone write ended, not before.
      for (const { gate } of lones.slice(0, 3)) gate.resolve();
      await Promise.all(loneAnswers.slice(0, 3));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(events.filter((e) => e.startsWith('group'))).toEqual([]);
      lones[3]!.gate.resolve();
      expect(await Promise.all(loneAnswers)).toEqual(lones.map(({ id }) => id));
      expect(await Promise.all(queuedAnswers)).toEqual(queued);
      expect(sql.filter((s) => /^begin/i.test(s)).length).toBe(1);
      expect(await stored([...lones.map(({ id }) => id), ...queued])).toEqual([...lones.map(({ id }) => id), ...queued].sort());
    });

    it('runs the unit in the next group when its lone write wrote nothing, and answers a lone write that failed with its error', async () => {
      const commits = grouped();
      const [viaGroup, after] = [randomUUID(), randomUUID()];
      sql = [];
      const answer = await commits.run(
        async (tx, _alone, rows) => {
          await rows.insertRow(tx, eventRows, values(viaGroup));
          return 'group';
        },
        {},
        async () => null,
      );
      expect(answer).toBe('group');
      expect(sql.filter((s) => /^begin/i.test(s)).length).toBe(1);
      await expect(
        commits.run(
          async () => 'not used',
          {},
          async () => {
            throw new Error('the lone write failed');
          },
        ),
      ).rejects.toThrow('the lone write failed');
      // Nor on the last of four lone writes under way when it fails: the unit queued behind them commits.
      const gates = Array.from({ length: 4 }, () => deferred<void>());
      const lones = gates.map((gate, i) =>
        commits.run(
          async () => 'not used',
          {},
          async () => {
            await gate.promise;
            if (i === 3) throw new Error('the last lone write failed');
            return { value: String(i) };
          },
        ),
      );
      const behind = randomUUID();
      const queued = commits.run(async (tx, _alone, rows) => rows.insertRow(tx, eventRows, values(behind)).then(() => 'queued'));
      for (const gate of gates) gate.resolve();
      expect((await Promise.allSettled(lones)).map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected']);
      expect(await queued).toBe('queued');
      expect(await stored([behind])).toEqual([behind]);
      // Nothing is left waiting on it.
      expect(await commits.run(async (tx, _alone, rows) => rows.insertRow(tx, eventRows, values(after)).then(() => 'next'))).toBe('next');
      expect(await stored([viaGroup, after])).toEqual([viaGroup, after].sort());
    });
  });
});
