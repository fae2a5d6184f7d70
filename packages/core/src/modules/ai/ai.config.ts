import { s, type InferConfig } from '../../kernel/config/schema.js';

const priceSchema = s.object({
  input: s.number().range(0, 1_000_000).describe('Credits per 1,000 input (prompt) tokens.'),
  output: s.number().range(0, 1_000_000).describe('Credits per 1,000 output (completion) tokens.'),
});

export type AiPrice = InferConfig<typeof priceSchema>;

/** `config.ai`: secrets at rest, pricing, tool-call limits and tool-action network policy. */
export const aiConfigSchema = s.object({
  encryption: s.object({
    key: s
      .string()
      .matches(/^[A-Za-z0-9+/_-]{43}=?$/, '32 bytes in base64 or base64url (openssl rand -base64 32)')
      .orUndefined()
      .describe(
        'AES-256-GCM key that encrypts the secret keys of AI model conf (`apiKey`, ...) at rest: 32 random bytes in base64. When unset, the reference host generates one on first start and keeps it in its secrets file (`database.secretsFile`); where it has none (PostgreSQL, `sqlite::memory:`), a key is derived from `auth.jwtSecret` (with a warning). Set it in production, and keep it when you rotate the JWT secret.',
      ),
    keyId: s
      .string()
      .matches(/^[A-Za-z0-9_-]{1,16}$/, '1 to 16 letters, digits, _ or -')
      .default('k1')
      .describe('Id of `encryption.key`. Every encrypted value starts with `enc:v1:<keyId>:`, so a value names the key that decrypts it.'),
    previousKeys: s
      .record(s.string().matches(/^[A-Za-z0-9+/_-]{43}=?$/, '32 bytes in base64'))
      .default(() => ({}))
      .describe(
        'Old keys by id, kept to decrypt values written before a rotation. At start, values under an old key are re-encrypted with the current key; remove an old key once the log says nothing uses it (docs/ai.md).',
      ),
    onUnreadable: s
      .string()
      .oneOf(['refuse', 'clear'] as const)
      .default('refuse')
      .describe(
        'What start does when a stored AI model secret cannot be decrypted with the configured keys (the key that wrote it is lost): `refuse` stops with `ai_secrets_unreadable` naming the models; `clear` removes those secrets (their models need their keys entered again) and starts. Set `clear` once, only when the old key is gone for good.',
      ),
  }),
  pricing: s.object({
    default: priceSchema.default(() => ({ input: 1, output: 2 })).describe('Price of a model no entry of `pricing.models` names.'),
    models: s
      .record(priceSchema)
      .default(() => ({}))
      .describe('Prices by `<service>/<conf.model>` (`openai/gpt-4o-mini`), by `<service>` alone, or by an AI model id; the most specific entry wins.'),
    reserveInputTokens: s
      .int()
      .range(1, 10_000_000)
      .default(8_000)
      .describe('Input tokens assumed when reserving credits for one model call, before its usage is known.'),
    reserveOutputTokens: s
      .int()
      .range(1, 10_000_000)
      .default(2_000)
      .describe('Output tokens assumed when reserving for a model call whose conf sets no `maxTokens`.'),
  }),
  toolAutoMaxSteps: s
    .int()
    .range(1, 100)
    .default(8)
    .describe('Most model calls in one conversation turn with `tool_auto` (each tool round is one more call).'),
  turns: s.object({
    heartbeatMs: s
      .int()
      .range(50, 600_000)
      .default(5_000)
      .describe('How often a conversation turn being written stores the text so far and renews its lease on the assistant message.'),
    staleAfterMs: s
      .int()
      .range(1_000, 3_600_000)
      .default(60_000)
      .describe(
        'A `streaming` assistant message whose lease was not renewed for this long belongs to a process that went away (a crash): it is marked `error` (`ai_turn_interrupted`) with the text stored so far, at start-up and then every half of this time.',
      ),
    logRetentionHours: s
      .int()
      .range(1, 87_600)
      .default(168)
      .describe(
        "How long a conversation's turn log (`GET /conversation/{id}/events`, the replay after a reconnect) keeps events; older batches are deleted hourly, except each conversation's newest batch (so numbering goes on). A reader asking for events before the oldest kept one gets the log from there. The stored messages are not affected.",
      ),
  }),
  records: s.object({
    enabled: s.boolean().default(true).describe('Record every AI provider call (runs, conversation turns, embeddings) as a model call record (docs/observability.md). A run\'s model usage is charged from its records: keep it on where credits matter.'),
    messageBodies: s
      .string()
      .oneOf(['auto', 'on', 'off'] as const)
      .default('auto')
      .describe('Whether a model call record keeps the messages and tool definitions sent: `on`, `off`, or `auto` (off when NODE_ENV is `production`, on otherwise). Counts, tool names, tool calls returned and usage are always kept.'),
    retentionDays: s.int().range(0, 36_500).default(30).describe('Model call records older than this many days are deleted by the `ai.records.prune` job (0 keeps them forever).'),
    pruneIntervalMs: s.int().range(1_000, 86_400_000).default(3_600_000).describe('How often the pruning job runs.'),
  }),
  tools: s.object({
    allowPrivateNetworks: s
      .boolean()
      .default(false)
      .describe('Deprecated alias: `true` acts as `network.allowPrivateNetworks: true` (for every outbound connection, not only tool actions), with a warning at start. Use `network.allowPrivateNetworks`.'),
    timeoutMs: s.int().range(100, 600_000).default(30_000).describe('Default and largest timeout of one tool action call.'),
    maxResponseBytes: s.int().range(1_024, 50_000_000).default(1_048_576).describe('Largest response body an `http` action reads.'),
  }),
});

export type AiConfig = InferConfig<typeof aiConfigSchema>;
