import { ObjectNode, parseConfig, s, type InferConfig, type Shape } from './schema.js';

export const logLevels = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The kernel's own configuration. Modules add their sections (`billing`, `oauth`, ...) on top. */
export const kernelConfigSchema = s.object({
  publicUrl: s
    .string()
    .orUndefined()
    .describe('External base URL of the API (scheme, host, optional path prefix). Defaults to the listening address.'),
  frontendUrl: s
    .string()
    .orUndefined()
    .describe('Base URL of the web front end (used for OAuth consent redirects). When unset, the host serves its own minimal pages.'),
  server: s.object({
    host: s.string().default('127.0.0.1').describe('Interface to listen on.'),
    port: s.int().range(0, 65535).default(8080).describe('TCP port; 0 picks a free one.'),
    transport: s.string().oneOf(['uws', 'node'] as const).default('uws').describe('HTTP/WebSocket transport.'),
    basePath: s
      .string()
      .default('')
      .matches(/^(\/[A-Za-z0-9._~-]+)*$/, 'empty or a path such as /api without a trailing slash')
      .describe('Path prefix under which every route is served.'),
    maxBodyBytes: s.int().range(1024).default(1_048_576).describe('Largest accepted request body; larger bodies get 413.'),
    shutdownTimeoutMs: s.int().range(0).default(10_000).describe('How long a graceful stop waits for in-flight requests, running jobs and the stops of modules (each module stop gets at least 2 s more once it has passed).'),
    streamKeepAliveMs: s
      .int()
      .range(0, 3_600_000)
      .default(15_000)
      .describe('After this long without a write, an SSE response sends a comment line (`: keep-alive`) and an NDJSON response a `{"type":"ping"}` line, so proxies with an idle timeout keep the stream open. 0 turns it off.'),
    trustProxy: s
      .boolean()
      .default(false)
      .describe(
        'Take the client address from X-Forwarded-For: the rightmost hop that is not a trusted proxy (`server.trustedProxies`; when that list is empty, only the direct peer is trusted, so the rightmost hop is the client). Never the leftmost entry, which the client writes itself.',
      ),
    trustedProxies: s
      .array(s.string())
      .default([])
      .describe('Addresses or CIDR ranges of the reverse proxies in front of Trellis (e.g. `10.0.0.0/8`, `::1`), skipped from the right of X-Forwarded-For when `server.trustProxy` is on.'),
    corsOrigins: s
      .array(s.string())
      .default([])
      .describe('Origins allowed by the default CORS policy ("*" for any). Routes may declare their own policy.'),
    admission: s.object({
      maxInFlight: s
        .int()
        .range(0)
        .default(64)
        .describe('Most HTTP requests this process works on at once (until each answer is ready; a streamed body does not count once its head is out). Past it a request is answered at once with 503 `overloaded` and `Retry-After` instead of waiting in a queue without bound. 0 turns the limit off. Health, readiness and metrics routes are never refused. The default is sized by `bench/mixed-load.mjs` on 2 cores: with 256 the admitted requests waited up to 8 s and some timed out; with 64 p99 stayed under 2 s with none (see docs/operations.md).'),
      maxEventLoopDelayMs: s
        .int()
        .range(0)
        .default(0)
        .describe('Refuse new requests (503 `overloaded`) while the event loop runs this many milliseconds late in two samples running (sampled every 50 ms; one long task alone does not trip it). 0 (the default) turns the check off: the in-flight limits bound the queue already.'),
      routes: s
        .record(s.int().range(1))
        .default({ 'POST /tool/vdb/:className/vector': 8 })
        .describe('Most requests at once per route, keyed by `METHOD /route/:param` as the route table declares it (see /openapi.json, `{param}` written `:param`); past it that route answers 503 `overloaded` while the others go on. The default bounds vector searches, whose cost grows with the collection.'),
      retryAfterSeconds: s.int().range(1, 3600).default(1).describe('The `Retry-After` of a 503 `overloaded`.'),
    }),
  }),
  database: s.object({
    url: s
      .string()
      .default('sqlite:./trellis.db')
      .describe('`sqlite:<path>`, `sqlite::memory:` or `postgres://user:pass@host:port/db`. SQLite commits with `synchronous=FULL` (durable through a power loss); `sqlite:<path>?synchronous=normal` trades that for speed. `?driver=better-sqlite3` runs SQLite on the synchronous driver instead of the asynchronous `sqlite3` (see docs/adapters.md).'),
    migrateOnStart: s.boolean().default(true).describe('Apply pending migrations when the host starts.'),
    debug: s.boolean().default(false).describe('Log every SQL statement (without its bound values).'),
    secretsFile: s
      .string()
      .orUndefined()
      .describe(
        'File where the reference host keeps the secrets it generates when `auth.jwtSecret` or `ai.encryption.key` is unset (JSON, owner-only permissions, written once on first start). Default: beside a SQLite file database, `<database file>.secrets.json`; none for `sqlite::memory:` and PostgreSQL (set the secrets there). Back it up with the database: without it, logins end and stored AI model keys cannot be read.',
      ),
  }),
  auth: s.object({
    jwtSecret: s
      .string()
      .min(32)
      .orUndefined()
      .describe('HS256 secret for user JWTs (at least 32 characters). When unset, the reference host generates one on first start and keeps it in its secrets file (`database.secretsFile`); where it has none (PostgreSQL, `sqlite::memory:`, a kernel embedded without the host), a random one is generated per process: development only.'),
    jwtIssuer: s.string().default('trellis').describe('`iss` claim of issued JWTs.'),
    jwtTtlSeconds: s.int().range(60).default(86_400).describe('Lifetime of user JWTs.'),
    passwordMinLength: s.int().range(8, 128).default(8).describe('Minimum password length.'),
    allowRegistration: s.boolean().default(true).describe('Whether POST /auth/register is open.'),
    fullAccessScopes: s
      .array(s.string())
      .default(['mobile:full'])
      .describe('Scopes that give a scoped credential (OAuth access token, scoped API key) the user\'s full authority on every route that accepts its credential kind. Other scopes pass only routes that list them (`RouteDefinition.scopes`).'),
    rateLimit: s.object({
      enabled: s.boolean().default(true).describe('Throttle `POST /auth/login` and `POST /auth/register` (429 with Retry-After), through the RateLimiter port (in process, or shared between processes per `adapters.rateLimit.store`).'),
      windowSeconds: s.int().range(1, 86_400).default(60).describe('Length of the counting window of the login and registration limits.'),
      perIp: s.int().range(1).default(60).describe('Login or registration attempts one client address may make per window (each route counted apart).'),
      perAccount: s.int().range(1).default(10).describe('Login or registration attempts for one email address per window, from any address (a flood against one account can lock it out for the window).'),
    }),
    principalCacheTtlMs: s
      .int()
      .range(0, 60_000)
      .default(5_000)
      .describe('How long a verified credential and its user, and the teams `GET /auth/me` lists, stay cached in process (0 disables). Changes made through Trellis invalidate at once in the process that made them; other processes see them when their entry expires.'),
  }),
  log: s.object({
    level: s.string().oneOf(logLevels).default('info').describe('pino log level.'),
    access: s.object({
      enabled: s.boolean().default(true).describe('Write one access log line per request at `info` (method, route pattern, status, duration, bytes, request id, principal id).'),
      sampleRate: s
        .number()
        .range(0, 1)
        .default(1)
        .describe('Share of requests that get an access log line (0 to 1). Responses with a 5xx status are always logged.'),
    }),
  }),
  metrics: s.object({
    enabled: s.boolean().default(true).describe('Serve Prometheus metrics at `GET /metrics`.'),
    token: s
      .string()
      .min(16)
      .orUndefined()
      .describe('Bearer token that `/metrics` requires (at least 16 characters). When unset the endpoint is open: keep it off the public network.'),
    port: s
      .int()
      .range(0, 65535)
      .orUndefined()
      .describe('Serve `/metrics` on this separate port (on `server.host`) instead of the main one; the reference host only.'),
    defaultMetrics: s.boolean().default(true).describe('Include the Node.js process metrics (CPU, memory, event loop lag, GC).'),
  }),
  network: s.object({
    allowPrivateNetworks: s
      .union(
        s.boolean(),
        s.array(
          s
            .string()
            .matches(/^(\d{1,5}|[\d.]+(\/\d{1,2})?|\[?[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*\]?(\/\d{1,3})?|(\*\.)?[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?\.?)$/, 'a port, an IP address or CIDR range, or a host name (`*.example` for a domain)'),
        ),
      )
      .default(false)
      .describe(
        'Outbound connections the server makes (AI model `baseURL`s, embedders, `http` and `mcp` tool actions) may not reach loopback, private, link-local, carrier-grade NAT, unique-local or other IANA special-purpose addresses (IPv4 embedded in IPv6 forms included), nor this host\'s own addresses; each connection is checked on the address it connects to. `true` lifts the guard; a list lets through the ports (`11434`), addresses or CIDR ranges (`10.1.0.0/16`, `::1`) and host names (`ollama.internal`, `*.svc.cluster.local`) it names. `ai.tools.allowPrivateNetworks: true` is a deprecated alias of `true` (docs/network.md).',
      ),
  }),
  tracing: s.object({
    enabled: s
      .boolean()
      .default(false)
      .describe('Let the reference host install the OpenTelemetry SDK and export spans. The core only uses `@opentelemetry/api`, so an embedding app can install its own SDK instead.'),
    exporter: s.string().oneOf(['otlp', 'console'] as const).default('otlp').describe('Where spans go: OTLP over HTTP/protobuf, or the console (development).'),
    endpoint: s
      .string()
      .orUndefined()
      .describe('OTLP traces endpoint, e.g. `http://collector:4318/v1/traces`. Default: the `OTEL_EXPORTER_OTLP_*` variables, else `http://localhost:4318/v1/traces`.'),
    serviceName: s.string().default('trellis').describe('`service.name` resource attribute of exported spans.'),
    sampleRatio: s.number().range(0, 1).default(1).describe('Share of new traces recorded (0 to 1); an incoming `traceparent` keeps its sampling decision.'),
  }),
});

export type KernelConfig = InferConfig<typeof kernelConfigSchema>;

/** The full, validated and frozen configuration: kernel options plus each module's section. */
export type TrellisConfig = KernelConfig & Record<string, unknown>;

/** Input shape: every field optional, as a user writes it. */
export type TrellisConfigInput = DeepPartial<KernelConfig> & Record<string, unknown>;

type DeepPartial<T> = T extends readonly unknown[] ? T : T extends object ? { [K in keyof T]?: DeepPartial<T[K]> } : T;

export function buildConfigSchema(moduleSections: Record<string, ObjectNode<Shape>>): ObjectNode<Shape> {
  return kernelConfigSchema.extend(moduleSections) as unknown as ObjectNode<Shape>;
}

export function validateConfig(input: unknown, moduleSections: Record<string, ObjectNode<Shape>> = {}): TrellisConfig {
  return parseConfig(buildConfigSchema(moduleSections), input) as TrellisConfig;
}
