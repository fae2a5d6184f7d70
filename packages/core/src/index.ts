import 'reflect-metadata';

// Kernel
export { createKernel, provide, type AdapterBinding, type Kernel, type KernelOptions, type MigrationStatus } from './kernel/kernel.js';
export { defineModule, isSchemaExtra, type JobContext, type JobDefinition, type ModuleContext, type RpcContext, type RpcMethodDefinition, type TrellisModule } from './kernel/module.js';
export { Hooks, type TrellisHooks } from './kernel/hooks.js';
export * from './kernel/tokens.js';
export { createLogger, redactedPaths } from './kernel/logger.js';

// Configuration
export { kernelConfigSchema, logLevels, validateConfig, buildConfigSchema, type KernelConfig, type TrellisConfig, type TrellisConfigInput } from './kernel/config/config.js';
export { ArrayNode, BaseNode, BooleanNode, ConfigError, describeSchema, NumberNode, parseConfig, RecordNode, s, ObjectNode, StringNode, UnionNode, type ConfigIssue, type InferConfig, type SchemaNode, type Shape } from './kernel/config/schema.js';

// Errors
export { TrellisError, errors, httpStatusByKind, isTrellisError, rpcCodeByKind, toTrellisError, type ErrorKind, type TrellisErrorOptions, type ValidationIssue } from './kernel/errors.js';

// HTTP
export { credentialRule, credentialRules, defineRoute, type ClassType, type ErrorFormat, type RequestContext, type RouteAuth, type RouteDefinition, type RouteResponseSpec } from './kernel/http/route.js';
export { Reply } from './kernel/http/reply.js';
export { oauthErrorBody, oauthErrorCodes, type OAuthErrorCode } from './kernel/http/oauth-error-body.js';
export { HttpDispatcher, parseQuery } from './kernel/http/dispatcher.js';
export { isStreamBody, type HttpMethod, type KernelRequest, type KernelResponse, type ResponseBody } from './kernel/http/types.js';
export { Router, type RouteMatch } from './kernel/http/router.js';
export { buildOpenApi, dtoSchema, type OpenApiInfo } from './kernel/http/openapi.js';
export { Doc, Nested, Nullable, Schema, type PropertyDoc } from './kernel/http/docs-metadata.js';
export { validateInput } from './kernel/validation.js';
export { PageQuery, paging, pageOf, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, type Page, type Paging } from './kernel/http/dto/paging.js';
export { IdParams } from './kernel/http/dto/id-params.js';

// WebSocket
export { defineChannel, type ChannelContext, type ChannelDefinition, type ChannelSession, type ChannelUpgradeRequest, type SocketLike } from './kernel/ws/channel.js';
export { WsDispatcher, type UpgradeDecision, type UpgradeInput } from './kernel/ws/ws-dispatcher.js';

// Auth
export { Authenticator, credentialVerifierServiceIdentifier, extractBearer, type CredentialMeta, type CredentialVerifier } from './kernel/auth/authenticator.js';
export { allCredentialKinds, hasPermission, type CredentialKind, type Permission, type Principal, type PrincipalDevice, type PrincipalUser } from './kernel/auth/principal.js';
export { requireScopes, scopesAllow } from './kernel/auth/scopes.js';
export { AccessRevocations, accessRevocationsServiceIdentifier, accessRevocationTopic, signalConcerns, type AccessRevokedSignal, type AccessSubject, type AccessWatcher } from './kernel/auth/access-revocation.js';
export { allowPrivateNetworksOf, destinationRefused, destinationRefusedCode, NetworkGuard, networkGuardServiceIdentifier, refusalOf, type AllowPrivateNetworks, type GuardResolver, type NetworkGuardOptions } from './kernel/net/network-guard.js';
export { specialPurposeRange } from './kernel/net/address-policy.js';
export { generateOpaqueToken, randomSecret, safeEqual, sha256Hex, uuidv7 } from './kernel/crypto.js';

// Ports
export { clockServiceIdentifier, ManualClock, SystemClock, type Clock } from './ports/clock.js';
export { idsServiceIdentifier, UuidV7Ids, type Ids } from './ports/ids.js';
export { InProcessPubSub, pubSubServiceIdentifier, type PubSub, type PubSubListener } from './ports/pubsub.js';
export { FlexibleRateLimiter, InMemoryRateLimiter, rateLimiterServiceIdentifier, windowSeconds, type RateLimitDecision, type RateLimiter } from './ports/rate-limiter.js';
export { Argon2idPasswordHasher, passwordHasherServiceIdentifier, type Argon2Options, type PasswordHasher } from './ports/password-hasher.js';
export { AbstractPaymentProvider, invalidWebhookSignature, paymentProviderServiceIdentifier, type Checkout, type CheckoutRequest, type PaymentEvent, type PaymentProvider, type WebhookDelivery } from './ports/payment-provider.js';
export { aiErrors, aiGatewayServiceIdentifier, aiProvidersServiceIdentifier, type AiChatRequest, type AiEmbedRequest, type AiEmbedResult, type AiFinishReason, type AiGateway, type AiMessage, type AiProvider, type AiStreamPart, type AiToolCall, type AiToolDefinition, type AiUsage, type JsonSchemaObject } from './ports/ai-provider.js';
export { messageOf, ProviderFailure, redactProviderError, redactSecrets, summariseFailure } from './ports/provider-errors.js';
export { runQueueServiceIdentifier, type RunJob, type RunJobHandler, type RunQueue, type RunSlot } from './ports/run-queue.js';
export type { RunCreditHold, RunGrantHold, RunSettlementClose, RunFence, RunFinalRecord, RunLogEvent, RunSettlement, RunStore, RunStoreDeps, RunStoreWork, RunStoreWriteOptions } from './ports/run-store.js';
export { codeSandboxServiceIdentifier, type CodeSandbox, type CodeSandboxRequest, type CodeSandboxResult } from './ports/code-sandbox.js';
export { CodeSandboxError, QuickJsCodeSandbox, type QuickJsCodeSandboxOptions } from './sandbox/quickjs-code-sandbox.js';
export { addressParserServiceIdentifier, type AddressCandidate, type AddressParser, type ParsedAddress, type ParsedAddressField } from './ports/address-parser.js';
export { speechSynthesizerServiceIdentifier, type SpeechSynthesizer, type SynthesizeOptions, type SynthesizedAudio } from './ports/speech-synthesizer.js';
export { embedderServiceIdentifier, type Embedder } from './ports/embedder.js';
export { vectorStoreServiceIdentifier, type VectorEntry, type VectorHit, type VectorSearchRequest, type VectorStore } from './ports/vector-store.js';
export { dialects, toMigrationEntries, type DatabaseAdapter, type DatabasePoolState, type Dialect, type EntityDefinition, type MigrationDefinition, type MigrationEntry } from './ports/database.js';
export { rowsPerInsert, sqlBool, sqlDate, sqlInsertRows, sqlRowTable, sqlStatement, type PreparedStatements, type RowSink, type SqlRowTable, type SqlStatement, type SqlValue } from './ports/database.js';
export { preparedStatementsServiceIdentifier } from './kernel/prepared-statements.js';

// Run store kit: what the database adapters build their run stores from (`DatabaseAdapter.runStore`,
// docs/adapters.md, "Run store"). `SqlRunStore` is the portable store, which an adapter's store
// configures (a group commit, where the hold goes) or extends with statements of its dialect; the
// rest describes the `runs` table and the event log's rows so that such statements are not a copy
// of core's. The billing CTEs they join (`grantHoldPgCtes`, `giveBackPgCtes`, `closePlan`) are
// billing's, exported with it below.
export { SqlRunStore, type SqlRunStoreOptions } from './modules/runs/store/sql-run-store.js';
export { GroupCommit, type LoneWrite } from './kernel/group-commit.js';
export { finishRunParams, finishRunStatement, runColumns, runValues, type RunColumn, type RunColumnKind, type RunFinal } from './modules/runs/queries.js';
export { rowEvents, rowText } from './modules/runs/services/event-text.js';
export { ROW_EVENTS } from './modules/runs/services/stored-event-sink.js';

// Modules
export { coreModules } from './modules/index.js';
export * from './modules/identity/index.js';
export * from './modules/billing/index.js';
export * from './modules/realtime/index.js';
export * from './modules/bots/index.js';
export * from './modules/conversations/index.js';
export * from './modules/ai/index.js';
export * from './modules/audit/index.js';
export * from './modules/developer/index.js';
export * from './modules/admin/index.js';
export * from './modules/oauth/index.js';
export * from './modules/projects/index.js';
export * from './modules/documents/index.js';
export * from './modules/blocks/index.js';
export * from './modules/collab/index.js';
export { systemModule } from './modules/system/system.module.js';
export * from './modules/runs/index.js';
export * from './modules/tools/index.js';
export * from './modules/triggers/index.js';
export * from './modules/evaluations/index.js';
export * from './modules/openai-compat/index.js';
export * from './modules/mcp/index.js';
export * from './modules/knowledge/index.js';
export {
  TrellisMetrics,
  metricsServiceIdentifier,
  durationBuckets,
  queryBuckets,
  checkMetricsToken,
  metricsReply,
  extractContext,
  injectTraceHeaders,
  tracer,
  withSpan,
  type MetricOptions,
  type HistogramOptions,
} from './kernel/observability/index.js';
export { inTransaction } from './kernel/transaction.js';
