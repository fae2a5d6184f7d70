import type { TrellisConfig } from '../../kernel/config/config.js';
import { s, type InferConfig } from '../../kernel/config/schema.js';

/** `config.realtime`: limits and timings of the JSON-RPC WebSocket channels (`/v3/wss`). */
export const realtimeConfigSchema = s.object({
  heartbeatTimeoutMs: s
    .int()
    .range(200, 3_600_000)
    .default(90_000)
    .describe(
      'A socket from which nothing (not even a `ping`) arrived for this long is closed with 4408. The spec recommends a client `ping` every 30 seconds and a 90-second limit.',
    ),
  authTimeoutMs: s
    .int()
    .range(100, 600_000)
    .default(10_000)
    .describe('A socket that has not completed the `auth` request this long after opening is closed with 4401.'),
  maxMessageBytes: s
    .int()
    .range(1024, 16_777_216)
    .default(65_536)
    .describe('Largest accepted client message (one frame, in bytes). A larger one closes the socket with 1009.'),
  maxBatchSize: s
    .int()
    .range(1, 1000)
    .default(50)
    .describe('Most requests in one JSON-RPC batch; a larger batch is answered with one -32600 error.'),
  maxConnectionsPerUser: s
    .int()
    .range(1, 100_000)
    .default(20)
    .describe('Most open user-channel sockets (`/v3/wss`) of one user in one process; one more is closed with 4429.'),
  maxConnectionsPerTarget: s
    .int()
    .range(1, 100_000)
    .default(20)
    .describe('Most open sockets of one application or hardware device (`/v3/wss/{id}`) in one process; one more is closed with 4429.'),
  resumeBufferSize: s
    .int()
    .range(0, 100_000)
    .default(200)
    .describe(
      'Pushes kept per user, application or device so a client that reconnects with `lastSeq` gets what it missed (0 turns resumption off). Older ones are dropped; a client that missed a dropped one gets `resync_required`.',
    ),
  resumeWindowMs: s
    .int()
    .range(0, 86_400_000)
    .default(120_000)
    .describe(
      'How long the push buffer of a user, application or device outlives its last socket in this process. Reconnecting later gives `resync_required`.',
    ),
  shutdownNotice: s
    .string()
    .default('The server is restarting for maintenance; reconnect in a few seconds.')
    .describe(
      'Content of the `system` push (type `maintenance`) every user-channel socket of a process receives when the process stops, just before its sockets close with 1001. Empty: none is sent.',
    ),
  maxPushBytes: s
    .int()
    .range(1024, 16_777_216)
    .default(1_048_576)
    .describe('Largest push (method and params as JSON, in bytes) the push API accepts; a larger one is refused with `push_too_large`.'),
});

export type RealtimeConfig = InferConfig<typeof realtimeConfigSchema>;

/** The validated `realtime` section (its defaults when the module's schema was not loaded). */
export function realtimeSection(config: TrellisConfig): RealtimeConfig {
  return (config['realtime'] as RealtimeConfig | undefined) ?? (realtimeConfigSchema.parse({}, 'realtime', []) as RealtimeConfig);
}
