import {
  aiProvidersServiceIdentifier,
  ConfigError,
  defineModule,
  parseConfig,
  paymentProviderServiceIdentifier,
  provide,
  pubSubServiceIdentifier,
  runQueueServiceIdentifier,
  scheduleTimerServiceIdentifier,
  rateLimiterServiceIdentifier,
  s,
  vectorStoreServiceIdentifier,
  addressParserServiceIdentifier,
  speechSynthesizerServiceIdentifier,
  type AdapterBinding,
  type AiProvider,
  type AddressParser,
  type SpeechSynthesizer,
  type Dialect,
  type InferConfig,
  type TrellisModule,
} from '@trellis/core';
import { importAdapter, importAdapterIfInstalled } from './adapter-packages.js';

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
    .describe('Where accepted workflow runs wait: `in-process` (each host executes its own runs) or `bullmq` (@trellis/queue-bullmq on `redisUrl`; `trellis worker` processes execute them, hosts with `runs.execute: false` only accept and stream; schedules of deployments then fall due through BullMQ job schedulers).'),
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
  /**
   * Imports the adapter packages the section asks for (each on demand: only those packages need to
   * be installed) and returns their bindings. A package the configuration needs and cannot find
   * fails with AdapterNotInstalledError naming it; optional ones (AI providers, the address parser,
   * sqlite-vec and eSpeak under `auto`) are skipped when absent.
   */
  load(): Promise<AdapterBinding[]>;
  /** The host's module for the section; its onStop closes what the host opened. */
  module: TrellisModule;
}

/**
 * The adapters the `adapters` section asks for, and the module that validates the section. The
 * section is parsed here at once (with the same schema the kernel uses), so a bad setting fails
 * before anything is imported; `load()` then imports the packages.
 */
export function adaptersFromConfig(raw: unknown, dialect: Dialect = 'sqlite'): ConfiguredAdapters {
  let config: AdaptersConfig;
  try {
    config = parseConfig(adaptersConfigSchema, raw ?? {});
  } catch (error) {
    if (error instanceof ConfigError) throw new ConfigError(error.issues.map((issue) => ({ ...issue, path: `adapters.${issue.path}` })));
    throw error;
  }
  if (config.queue === 'bullmq' && !config.redisUrl) throw new ConfigError([{ path: 'adapters.redisUrl', message: 'is required when adapters.queue is "bullmq"' }]);
  const limitStore = config.rateLimit.store === 'auto' ? (config.redisUrl ? 'redis' : 'memory') : config.rateLimit.store;
  if (limitStore === 'redis' && !config.redisUrl) throw new ConfigError([{ path: 'adapters.redisUrl', message: 'is required when adapters.rateLimit.store is "redis"' }]);
  if (limitStore === 'postgres' && !config.rateLimit.postgresUrl) {
    throw new ConfigError([{ path: 'adapters.rateLimit.postgresUrl', message: 'is required when adapters.rateLimit.store is "postgres"' }]);
  }
  const vector = config.vector.store === 'auto' ? (dialect === 'sqlite' ? 'sqlite-vec' : 'exact') : config.vector.store;
  if (vector === 'sqlite-vec' && config.vector.store !== 'auto' && dialect !== 'sqlite') {
    throw new ConfigError([{ path: 'adapters.vector.store', message: 'sqlite-vec needs the SQLite database' }]);
  }
  if (vector === 'pgvector' && !config.vector.pgvectorUrl) throw new ConfigError([{ path: 'adapters.vector.pgvectorUrl', message: 'is required when adapters.vector.store is "pgvector"' }]);
  const stripe = config.payments.stripe;
  if (config.payments.provider === 'stripe') {
    const missing = (['secretKey', 'webhookSecret', 'successUrl', 'cancelUrl'] as const).filter((key) => !stripe[key]);
    if (missing.length) {
      throw new ConfigError(missing.map((key) => ({ path: `adapters.payments.stripe.${key}`, message: 'is required when adapters.payments.provider is "stripe"' })));
    }
  }

  const owned: Array<{ close(): Promise<void> }> = [];
  const load = async (): Promise<AdapterBinding[]> => {
    // Every package is imported before any adapter is constructed, so a missing one fails before
    // a connection (Redis, ...) is opened.
    const [aiProviders, pubsub, ratelimit, ratelimitPostgres, bullmq, sqliteVec, pgvector, speechPackage, address, stripePackage] = await Promise.all([
      installedAiProviders(),
      config.redisUrl ? importAdapter('@trellis/pubsub-redis', 'adapters.redisUrl') : undefined,
      limitStore === 'redis' ? importAdapter('@trellis/ratelimit-redis', 'adapters.rateLimit.store "redis" (or adapters.redisUrl)') : undefined,
      limitStore === 'postgres' ? importAdapter('@trellis/ratelimit-postgres', 'adapters.rateLimit.store "postgres"') : undefined,
      config.queue === 'bullmq' ? importAdapter('@trellis/queue-bullmq', 'adapters.queue "bullmq"') : undefined,
      // `auto` on SQLite: sqlite-vec when its package is installed, else the in-process exact scan.
      vector !== 'sqlite-vec' ? undefined : config.vector.store === 'auto' ? importAdapterIfInstalled('@trellis/vector-sqlite') : importAdapter('@trellis/vector-sqlite', 'adapters.vector.store "sqlite-vec"'),
      vector === 'pgvector' ? importAdapter('@trellis/vector-pgvector', 'adapters.vector.store "pgvector"') : undefined,
      config.speech.provider === 'none'
        ? undefined
        : config.speech.provider === 'espeak'
          ? importAdapter('@trellis/speech-espeak', 'adapters.speech.provider "espeak"')
          : importAdapterIfInstalled('@trellis/speech-espeak'),
      // Optional: without @trellis/address-cn, /tool/address answers 503 address_parser_not_configured.
      importAdapterIfInstalled('@trellis/address-cn'),
      config.payments.provider === 'stripe' ? importAdapter('@trellis/payments-stripe', 'adapters.payments.provider "stripe"') : undefined,
    ]);
    const bindings: AdapterBinding[] = [provide(aiProvidersServiceIdentifier, aiProviders)];
    if (config.redisUrl && pubsub) {
      // The kernel closes the bound PubSub at stop.
      bindings.push(provide(pubSubServiceIdentifier, new pubsub.RedisPubSub({ url: config.redisUrl, channelPrefix: `${config.redisPrefix}pubsub:` })));
    }
    // The rate limiter is closed by this module.
    if (ratelimit) {
      const limiter = new ratelimit.RedisRateLimiter({ url: config.redisUrl!, keyPrefix: `${config.redisPrefix}ratelimit:` });
      bindings.push(provide(rateLimiterServiceIdentifier, limiter));
      owned.push(limiter);
    } else if (ratelimitPostgres) {
      const limiter = new ratelimitPostgres.PostgresRateLimiter({ url: config.rateLimit.postgresUrl! });
      bindings.push(provide(rateLimiterServiceIdentifier, limiter));
      owned.push(limiter);
    }
    if (bullmq) {
      // BullMQ's prefix takes letters, digits, `_ . -` only: the Redis prefix with its separators replaced.
      const prefix = `${config.redisPrefix}queue`.replace(/[^A-Za-z0-9_.-]/g, '-').slice(-100);
      // The runs module closes the bound RunQueue at stop.
      bindings.push(provide(runQueueServiceIdentifier, new bullmq.BullMqRunQueue({ url: config.redisUrl!, prefix, ...config.bullmq })));
      // Schedules fall due through BullMQ's job schedulers (the triggers module closes it at stop).
      bindings.push(provide(scheduleTimerServiceIdentifier, new bullmq.BullMqScheduleTimer({ url: config.redisUrl!, prefix })));
    }
    if (sqliteVec) bindings.push(provide(vectorStoreServiceIdentifier, new sqliteVec.SqliteVecVectorStore()));
    // The kernel starts and closes the bound VectorStore (tools module).
    if (pgvector) bindings.push(provide(vectorStoreServiceIdentifier, new pgvector.PgVectorStore({ url: config.vector.pgvectorUrl! })));
    const speech = config.speech;
    // `auto`: eSpeak when both its package and the program are there.
    if (speechPackage && (speech.provider === 'espeak' || speechPackage.EspeakSpeechSynthesizer.isAvailable(speech.espeakPath))) {
      bindings.push(provide(speechSynthesizerServiceIdentifier, new speechPackage.EspeakSpeechSynthesizer({ program: speech.espeakPath, voice: speech.voice }) as SpeechSynthesizer));
    }
    if (address) bindings.push(provide(addressParserServiceIdentifier, new address.ChineseAddressParser() as AddressParser));
    if (stripePackage) {
      bindings.push(
        provide(
          paymentProviderServiceIdentifier,
          new stripePackage.StripePaymentProvider({ secretKey: stripe.secretKey!, webhookSecret: stripe.webhookSecret!, successUrl: stripe.successUrl!, cancelUrl: stripe.cancelUrl!, apiBaseUrl: stripe.apiBaseUrl }),
        ),
      );
    }
    return bindings;
  };
  return {
    load,
    module: {
      ...adaptersModule,
      async onStop() {
        await Promise.allSettled(owned.splice(0).map((adapter) => adapter.close()));
      },
    },
  };
}

/**
 * The AI provider adapters the reference host installs: `openai` (and every OpenAI-compatible
 * server), `anthropic`, `gemini` and `dify`, each one whose package is installed. They need no
 * host configuration: each AI model's `service` picks one and its `conf` holds the settings (see
 * docs/ai-providers.md); a model whose provider package is missing answers `ai_provider_not_configured`.
 * An embedder replaces the list with `provide(aiProvidersServiceIdentifier, [...])` in
 * `createHost({adapters})`.
 */
export async function referenceAiProviders(): Promise<AiProvider<any>[]> {
  return installedAiProviders();
}

async function installedAiProviders(): Promise<AiProvider<any>[]> {
  const [openai, anthropic, gemini, dify] = await Promise.all([
    importAdapterIfInstalled('@trellis/ai-openai'),
    importAdapterIfInstalled('@trellis/ai-anthropic'),
    importAdapterIfInstalled('@trellis/ai-gemini'),
    importAdapterIfInstalled('@trellis/ai-dify'),
  ]);
  const providers: AiProvider<any>[] = [];
  if (openai) providers.push(new openai.OpenAiProvider());
  if (anthropic) providers.push(new anthropic.AnthropicProvider());
  if (gemini) providers.push(new gemini.GeminiProvider());
  if (dify) providers.push(new dify.DifyProvider());
  return providers;
}
