import { TrellisError } from '../../kernel/errors.js';

/** The errors of triggers (docs/errors.md). */
export const triggerErrors = {
  webhookNotFound: () => new TrellisError('not_found', 'webhook_trigger_not_found', 'No such webhook trigger, or it is disabled.'),
  signatureMissing: () =>
    new TrellisError('unauthenticated', 'webhook_signature_missing', 'Send the webhook-id, webhook-timestamp and webhook-signature headers (Standard Webhooks).'),
  signatureInvalid: () => new TrellisError('unauthenticated', 'webhook_signature_invalid', 'No signature in webhook-signature matches the body with this trigger\'s secret.'),
  timestampOutOfRange: (toleranceSeconds: number) =>
    new TrellisError('unauthenticated', 'webhook_timestamp_out_of_range', `webhook-timestamp is more than ${toleranceSeconds} seconds from the server's clock.`),
  bearerInvalid: () =>
    new TrellisError('unauthenticated', 'webhook_secret_invalid', 'Send this trigger\'s secret as "Authorization: Bearer <secret>".', { headers: { 'www-authenticate': 'Bearer' } }),
  unreadableBody: (reason: string) => new TrellisError('bad_request', 'webhook_body_unreadable', `The request body could not be read: ${reason}.`),
  duplicatePending: () =>
    new TrellisError('conflict', 'webhook_delivery_in_progress', 'A delivery with this webhook-id is starting its run right now: retry in a moment.', { headers: { 'retry-after': '1' } }),
  scheduleNotFound: () => new TrellisError('not_found', 'schedule_not_found', 'No such schedule, or you have no access to it.'),
  invalidCron: (message: string) =>
    new TrellisError('validation', 'invalid_cron', `cron: ${message}`, { details: [{ field: 'cron', constraint: 'cron', message }] }),
  invalidTimezone: (zone: string) =>
    new TrellisError('validation', 'invalid_timezone', `"${zone}" is not an IANA time zone (such as Europe/Paris or UTC).`, { details: [{ field: 'timezone', constraint: 'timezone', message: 'must be an IANA time zone' }] }),
  invalidMapping: (field: string, message: string) =>
    new TrellisError('validation', 'invalid_webhook_mapping', `mapping.${field}: ${message}`, { details: [{ field: `mapping.${field}`, constraint: 'mapping', message }] }),
  subscriptionNotFound: () => new TrellisError('not_found', 'webhook_subscription_not_found', 'No such webhook subscription of yours.'),
  deliveryNotFound: () => new TrellisError('not_found', 'webhook_delivery_not_found', 'No such delivery of this subscription.'),
  invalidDestination: (reason: string) =>
    new TrellisError('validation', 'invalid_webhook_url', `url: ${reason}`, { details: [{ field: 'url', constraint: 'url', message: reason }] }),
};
