import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signWebhook, verifyWebhook, webhookHeaders } from './signature.js';

// The Standard Webhooks specification's published vector (standard-webhooks/standard-webhooks,
// libraries/javascript/src/webhook.test.ts, "sign function works").
const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
const msgId = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
const timestamp = 1614265330;
const payload = '{"test": 2432232314}';
const expected = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';

const headers = (signature: string, ts = timestamp, id = msgId) => ({ 'webhook-id': id, 'webhook-timestamp': String(ts), 'webhook-signature': signature });
const at = timestamp * 1000;

describe('Standard Webhooks signatures', () => {
  it('signs the published test vector', () => {
    expect(signWebhook(secret, msgId, new Date(timestamp * 1000), payload)).toBe(expected);
    // The same HMAC computed by hand: base64 of HMAC-SHA256(base64-decoded key, "id.timestamp.body").
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    expect(`v1,${createHmac('sha256', key).update(`${msgId}.${timestamp}.${payload}`).digest('base64')}`).toBe(expected);
  });

  it('verifies the vector, as bytes or text, with or without the whsec_ prefix', () => {
    expect(verifyWebhook(secret, headers(expected), payload, at, 300)).toBe('ok');
    expect(verifyWebhook(secret, headers(expected), new TextEncoder().encode(payload), at, 300)).toBe('ok');
    expect(verifyWebhook(secret.slice(6), headers(expected), payload, at, 300)).toBe('ok');
  });

  it('accepts a list of signatures when one matches, ignoring other versions', () => {
    const list = ['v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=', 'v2,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=', expected, 'v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc='].join(' ');
    expect(verifyWebhook(secret, headers(list), payload, at, 300)).toBe('ok');
    expect(verifyWebhook(secret, headers(`v2,${expected.slice(3)}`), payload, at, 300)).toBe('signature');
  });

  it('refuses a changed body, id or timestamp, partial and bogus signatures', () => {
    expect(verifyWebhook(secret, headers(expected), '{"test": 2432232315}', at, 300)).toBe('signature');
    expect(verifyWebhook(secret, headers(expected, timestamp, 'msg_other'), payload, at, 300)).toBe('signature');
    expect(verifyWebhook(secret, headers(expected, timestamp + 1), payload, at, 300)).toBe('signature');
    expect(verifyWebhook(secret, headers(expected.slice(0, 8)), payload, at, 300)).toBe('signature');
    expect(verifyWebhook(secret, headers('v1,'), payload, at, 300)).toBe('signature');
    expect(verifyWebhook(secret, headers('v1,dawfeoifkpqwoekfpqoekf'), payload, at, 300)).toBe('signature');
  });

  it('refuses missing headers and timestamps outside the tolerance window, either way', () => {
    const { 'webhook-id': _id, ...noId } = headers(expected);
    expect(verifyWebhook(secret, noId, payload, at, 300)).toBe('missing');
    expect(verifyWebhook(secret, { ...headers(expected), 'webhook-signature': '' }, payload, at, 300)).toBe('missing');
    expect(verifyWebhook(secret, headers(expected, Number.NaN), payload, at, 300)).toBe('timestamp');
    expect(verifyWebhook(secret, headers(expected), payload, at + 301_000, 300)).toBe('timestamp');
    expect(verifyWebhook(secret, headers(expected), payload, at - 301_000, 300)).toBe('timestamp');
    expect(verifyWebhook(secret, headers(expected), payload, at + 299_000, 300)).toBe('ok');
  });

  it('webhookHeaders signs at whole seconds, and verifies', () => {
    const now = new Date(1_700_000_000_123);
    const sent = webhookHeaders(secret, 'msg_1', '{"a":1}', now);
    expect(sent['webhook-timestamp']).toBe('1700000000');
    expect(verifyWebhook(secret, sent, '{"a":1}', now.getTime(), 5)).toBe('ok');
  });
});
