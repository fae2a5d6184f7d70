import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe } from 'vitest';
import { BullMqRunQueue } from '@trellis/queue-bullmq';
import { describeRunQueueContract } from '../../../../test/support/run-queue-contract.js';

const url = process.env.TRELLIS_TEST_REDIS_URL;

describe.skipIf(!url)(`BullMqRunQueue against the RunQueue contract (real Redis${url ? '' : ': skipped, TRELLIS_TEST_REDIS_URL is not set'})`, () => {
  const prefixes: string[] = [];
  afterAll(async () => {
    const redis = new Redis(url!);
    for (const prefix of prefixes) {
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
    }
    await redis.quit();
  });

  describeRunQueueContract('BullMQ', ({ concurrency, closeGraceMs }) => {
    const prefix = `tc${randomUUID().slice(0, 8)}`;
    prefixes.push(prefix);
    return new BullMqRunQueue({ url, prefix, concurrency, closeGraceMs });
  });
});
