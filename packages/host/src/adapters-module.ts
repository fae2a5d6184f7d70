import { AnthropicProvider } from '@trellis/ai-anthropic';
import { DifyProvider } from '@trellis/ai-dify';
import { GeminiProvider } from '@trellis/ai-gemini';
import { OpenAiProvider } from '@trellis/ai-openai';
import {
  aiProvidersServiceIdentifier,
  ConfigError,
  defineModule,
  parseConfig,
  paymentProviderServiceIdentifier,
  provide,
  pubSubServiceIdentifier,
  runQueueServiceIdentifier,
  rateLimiterServiceIdentifier,
  s,
  vectorStoreServiceIdentifier,
  addressParserServiceIdentifier,
  speechSynthesizerServiceIdentifier,
  type AdapterBinding,
  type AiProvider,
  type Dialect,
  type InferConfig,
  type TrellisModule,
} from '@trellis/core';
import { ChineseAddressParser } from '@trellis/address-cn';
import { StripePaymentProvider } from '@trellis/payments-stripe';
import { EspeakSpeechSynthesizer } from '@trellis/speech-espeak';
import { PgVectorStore } from '@trellis/vector-pgvector';
import { SqliteVecVectorStore } from '@trellis/vector-sqlite';
import { RedisPubSub } from '@trellis/pubsub-redis';
import { BullMqRunQueue } from '@trellis/queue-bullmq';
import { RedisRateLimiter } from '@trellis/ratelimit-redis';
import { PostgresRateLimiter } from '@trellis/ratelimit-postgres';

/** The `adapters` section: which adapter packages the reference host binds, from configuration. */
export const adaptersConfigSchema = s.object({
  redisUrl: s
    .string()
    .matches(/^rediss?:\/\//, 'a redis:// or rediss:// URL')
    .orUndefined()
    .describe('Redis for several host processes: binds @trellis/pubsub-redis (pushes and collaborative updates) and, unless rateLimit.store says otherwise, @trellis/ratelimit-redis (rate limits). Unset: in-process defaults.'),
  redisPrefix: s.string().default('trellis:').describe('Prefix of every Redis key and channel, so deployments can share one Redis.'),
  queue: s
    .string()
    .oneOf(['in-process', 'bullmq'] as const)
    .default('in-process')
    .describe('Where accepted workflow runs wait: `in-process` (each host executes its own runs) or `bullmq` (@trellis/queue-bullmq on `redisUrl`; `trellis worker` processes execute them, hosts with `runs.execute: false` only accept and stream).'),
  bullmq: s.object({
    concurrency: s.int().range(1, 1_000).default(4).describe('Runs one worker process executes at once.'),
    lockDurationMs: s.int().range(1_000, 600_000).default(30_000).describe('How long a worker\'s hold on a run lasts without renewal; a killed worker\'s run is handed out again after it.'),
    stalledIntervalMs: s.int().range(500, 600_000).default(30_000).describe('How often workers look for runs whose worker died.'),
    maxStalledCount: s.int().range(0, 20).default(1).describe('How many times a run whose worker died is handed out again; after that it fails with `run_error` `worker_lost`.'),
    closeGraceMs: s.int().range(0, 600_000).default(30_000).describe('On stop, how long a worker waits for running runs before it puts them back in the queue.'),
  }),
  rateLimit: s.object({
    store: s
      .string()
      .oneOf(['auto', 'memory', 'redis', 'postgres'] as const)
      .default('auto')
      .describe('Where rate-limit counts (sign-in, registration, OAuth, tool sign-in) live: `memory` (each process counts alone), `redis` (@trellis/ratelimit-redis on redisUrl), `postgres` (@trellis/ratelimit-postgres on postgresUrl), or `auto` (redis when redisUrl is set, else memory).'),
    postgresUrl: s.string().matches(/^postgres(ql)?:\/\//, 'a postgres:// URL').orUndefined().describe('PostgreSQL for store = postgres (may be the application database); the table trellis_rate_limits is created there.'),
  }),
  vector: s.object({
    store: s
      .string()
      .oneOf(['auto', 'exact', 'sqlite-vec', 'pgvector'] as const)
      .default('auto')
      .describe('Vector store of /tool/vdb: `auto` (sqlite-vec on SQLite, the in-process exact scan on PostgreSQL), `exact`, `sqlite-vec` or `pgvector` (@trellis/vector-pgvector; needs pgvectorUrl).'),
    pgvectorUrl: s.string().matches(/^postgres(ql)?:\/\//, 'a postgres:// URL').orUndefined().describe('PostgreSQL with the vector extension, for store = pgvector (may be the application database).'),
  }),
  speech: s.object({
    provider: s
      .string()
      .oneOf(['auto', 'none', 'espeak'] as const)
      .default('auto')
      .describe('Speech synthesizer of /tool/speech: `espeak` (@trellis/speech-espeak, runs the espeak-ng program), `none` (answers speech_not_configured), or `auto` (espeak when the program is found).'),
    espeakPath: s.string().default('espeak-ng').describe('The espeak-ng program (a name on PATH or a path).'),
    voice: s.string().default('cmn+f3').describe('eSpeak NG voice: Mandarin (`cmn`) with a female variant (`+f3`).'),
  }),
  payments: s.object({
    provider: s.string().oneOf(['manual', 'stripe'] as const).default('manual').describe('`manual` (an administrator confirms orders; development default) or `stripe`.'),
    stripe: s.object({
      secretKey: s.string().orUndefined().describe('Stripe secret key (sk_live_..., sk_test_...). Required when provider is stripe.'),
      webhookSecret: s.string().orUndefined().describe('Signing secret of the webhook endpoint {publicUrl}/billing/webhooks/stripe (whsec_...). Required when provider is stripe.'),
      successUrl: s.string().orUndefined().describe('Where Checkout sends the payer after paying. Required when provider is stripe.'),
      cancelUrl: s.string().orUndefined().describe('Where Checkout sends a payer who gives up. Required when provider is stripe.'),
      apiBaseUrl: s.string().default('https://api.stripe.com').describe("Stripe's API origin."),
    }),
  }),
});

export type AdaptersConfig = InferConfig<typeof adaptersConfigSchema>;

/** Declares the section so the kernel validates it and the configuration reference lists it. */
export const adaptersModule = defineModule({ name: 'adapters', config: adaptersConfigSchema });

export interface ConfiguredAdapters {
  bindings: AdapterBinding[];
  /** The host's module for the section; its onStop closes what the host opened. */
  module: TrellisModule;
}

/**
 * The adapters the `adapters` section asks for, and the module that validates the section. The
 * section is parsed here first (with the same schema the kernel uses), because the adapters must
 * exist before the kernel is built.
 */
export function adaptersFromConfig(raw: unknown, dialect: Dialect = 'sqlite'): ConfiguredAdapters {
  let config: AdaptersConfig;
  try {
    config = parseConfig(adaptersConfigSchema, raw ?? {});
  } catch (error) {
    if (error instanceof ConfigError) throw new ConfigError(error.issues.map((issue) => ({ ...issue, path: `adapters.${issue.path}` })));
    throw error;
  }
  const bindings: AdapterBinding[] = [provide(aiProvidersServiceIdentifier, referenceAiProviders())];
  const owned: Array<{ close(): Promise<void> }> = [];
  if (config.redisUrl) {
    // The kernel closes the bound PubSub at stop.
    bindings.push(provide(pubSubServiceIdentifier, new RedisPubSub({ url: config.redisUrl, channelPrefix: `${config.redisPrefix}pubsub:` })));
  }
  // The rate limiter is closed by this module.
  const limitStore = config.rateLimit.store === 'auto' ? (config.redisUrl ? 'redis' : 'memory') : config.rateLimit.store;
  if (limitStore === 'redis') {
    if (!config.redisUrl) throw new ConfigError([{ path: 'adapters.redisUrl', message: 'is required when adapters.rateLimit.store is "redis"' }]);
    const limiter = new RedisRateLimiter({ url: config.redisUrl, keyPrefix: `${config.redisPrefix}ratelimit:` });
    bindings.push(provide(rateLimiterServiceIdentifier, limiter));
    owned.push(limiter);
  } else if (limitStore === 'postgres') {
    if (!config.rateLimit.postgresUrl) throw new ConfigError([{ path: 'adapters.rateLimit.postgresUrl', message: 'is required when adapters.rateLimit.store is "postgres"' }]);
    const limiter = new PostgresRateLimiter({ url: config.rateLimit.postgresUrl });
    bindings.push(provide(rateLimiterServiceIdentifier, limiter));
    owned.push(limiter);
  }
  if (config.queue === 'bullmq') {
    if (!config.redisUrl) throw new ConfigError([{ path: 'adapters.redisUrl', message: 'is required when adapters.queue is "bullmq"' }]);
    // BullMQ's prefix takes letters, digits, `_ . -` only: the Redis prefix with its separators replaced.
    const prefix = `${config.redisPrefix}queue`.replace(/[^A-Za-z0-9_.-]/g, '-').slice(-100);
    const queue = new BullMqRunQueue({ url: config.redisUrl, prefix, ...config.bullmq });
    // The runs module closes the bound RunQueue at stop.
    bindings.push(provide(runQueueServiceIdentifier, queue));
  }
  const vector = config.vector.store === 'auto' ? (dialect === 'sqlite' ? 'sqlite-vec' : 'exact') : config.vector.store;
  if (vector === 'sqlite-vec') {
    if (dialect !== 'sqlite') throw new ConfigError([{ path: 'adapters.vector.store', message: 'sqlite-vec needs the SQLite database' }]);
    bindings.push(provide(vectorStoreServiceIdentifier, new SqliteVecVectorStore()));
  } else if (vector === 'pgvector') {
    if (!config.vector.pgvectorUrl) throw new ConfigError([{ path: 'adapters.vector.pgvectorUrl', message: 'is required when adapters.vector.store is "pgvector"' }]);
    // The kernel starts and closes the bound VectorStore (tools module).
    bindings.push(provide(vectorStoreServiceIdentifier, new PgVectorStore({ url: config.vector.pgvectorUrl })));
  }
  const speech = config.speech;
  if (speech.provider === 'espeak' || (speech.provider === 'auto' && EspeakSpeechSynthesizer.isAvailable(speech.espeakPath))) {
    bindings.push(provide(speechSynthesizerServiceIdentifier, new EspeakSpeechSynthesizer({ program: speech.espeakPath, voice: speech.voice })));
  }
  bindings.push(provide(addressParserServiceIdentifier, new ChineseAddressParser()));
  if (config.payments.provider === 'stripe') {
    const stripe = config.payments.stripe;
    const missing = (['secretKey', 'webhookSecret', 'successUrl', 'cancelUrl'] as const).filter((key) => !stripe[key]);
    if (missing.length) {
      throw new ConfigError(missing.map((key) => ({ path: `adapters.payments.stripe.${key}`, message: 'is required when adapters.payments.provider is "stripe"' })));
    }
    bindings.push(
      provide(
        paymentProviderServiceIdentifier,
        new StripePaymentProvider({ secretKey: stripe.secretKey!, webhookSecret: stripe.webhookSecret!, successUrl: stripe.successUrl!, cancelUrl: stripe.cancelUrl!, apiBaseUrl: stripe.apiBaseUrl }),
      ),
    );
  }
  return {
    bindings,
    module: {
      ...adaptersModule,
      async onStop() {
        await Promise.allSettled(owned.map((adapter) => adapter.close()));
      },
    },
  };
}

/**
 * The AI provider adapters the reference host installs: `openai` (and every OpenAI-compatible
 * server), `anthropic`, `gemini` and `dify`. They need no host configuration: each AI model's
 * `service` picks one and its `conf` holds the settings (see docs/ai-providers.md). An embedder
 * replaces the list with `provide(aiProvidersServiceIdentifier, [...])` in `createHost({adapters})`.
 */
export function referenceAiProviders(): AiProvider<any>[] {
  return [new OpenAiProvider(), new AnthropicProvider(), new GeminiProvider(), new DifyProvider()];
}
