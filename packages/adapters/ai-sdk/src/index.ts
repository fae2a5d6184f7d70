export { ConfReader, type ConfIssue } from './conf.js';
export { AiSdkProvider, confSecrets, mapAiSdkError, sentenceStart, readSamplingConf, toModelMessages, type AiSdkConf } from './provider.js';
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
