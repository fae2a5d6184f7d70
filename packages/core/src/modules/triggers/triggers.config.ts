import { s, type InferConfig } from '../../kernel/config/schema.js';

export const triggersConfigSchema = s.object({
  webhooks: s.object({
    toleranceSeconds: s
      .int()
      .range(10, 86_400)
      .default(300)
      .describe('How far a `webhook-timestamp` of an inbound webhook may be from this server\'s clock, in seconds, either way (Standard Webhooks). Older or newer deliveries answer 401 `webhook_timestamp_out_of_range`.'),
    receiptHours: s
      .int()
      .range(1, 8_760)
      .default(24)
      .describe('How long the `webhook-id` of an accepted inbound delivery is kept: a repeated delivery within this time attaches to the run the first one started. Keep it above the tolerance window.'),
    maxWaitSeconds: s
      .int()
      .range(1, 3_600)
      .default(30)
      .describe('Largest `waitSeconds` a webhook trigger in `wait` mode may ask for: past it the delivery answers 202 with the run id and the run goes on.'),
    maxBodyBytes: s.int().range(1_024, 64 * 1024 * 1024).default(1024 * 1024).describe('Largest body an inbound webhook accepts.'),
  }),
  schedules: s.object({
    tickMs: s
      .int()
      .range(100, 60_000)
      .default(1_000)
      .describe('How often each host process looks for due schedules (without Redis). Every process may look: a due time starts one run across all of them.'),
    graceSeconds: s
      .int()
      .range(1, 86_400)
      .default(60)
      .describe('A due time at most this old when a process looks is run as usual; older ones were missed (downtime) and follow the schedule\'s `missed` policy.'),
  }),
  outbound: s.object({
    maxAttempts: s.int().range(1, 50).default(8).describe('Attempts of an outbound webhook delivery before it is marked failed (redeliver it through the API).'),
    backoffBaseMs: s.int().range(10, 3_600_000).default(5_000).describe('Delay before the second attempt; each further attempt waits twice as long as the previous one (with up to 20 % jitter), capped by `backoffMaxMs`.'),
    backoffMaxMs: s.int().range(10, 86_400_000).default(3_600_000).describe('Longest delay between two attempts of a delivery.'),
    timeoutMs: s.int().range(100, 120_000).default(10_000).describe('Time limit of one delivery attempt (connect, send, read the status).'),
    pollMs: s.int().range(50, 60_000).default(1_000).describe('How often each process looks for deliveries that are due.'),
    batch: s.int().range(1, 1_000).default(20).describe('Deliveries one process claims per look.'),
  }),
});

export type TriggersConfig = InferConfig<typeof triggersConfigSchema>;
