export { CONF_HINT, confField, HTTP_URL_PATTERN, readConf, samplingField, type ConfIssue, type ConfOf, type ConfRule } from './conf.js';
export { AiSdkProvider, confSecrets, mapAiSdkError, sentenceStart, toModelMessages, type AiSdkConf } from './provider.js';
export {
  abortReason,
  aiErrorFromStatus,
  callWithRetries,
  defaultRetryPolicy,
  final,
  isAbortError,
  retryAfterSeconds,
  retryDelayMs,
  streamWithRetries,
  type AiAdapterOptions,
  type RetryPolicy,
} from './retry.js';
