import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretBox, isSealed, SECRET_MASK } from './secret-box.js';
import { isSecretKey, keepMaskedSecrets, maskConf, openSecrets, sealSecrets, secretTexts } from './secret-fields.js';

const box = () => new SecretBox('k1', new Map([['k1', randomBytes(32)]]));

describe('secret-bearing conf fields', () => {
  it('tells secret-looking keys from settings that merely mention tokens', () => {
    for (const key of ['apiKey', 'api_key', 'x-api-key', 'Authorization', 'token', 'accessToken', 'clientSecret', 'password', 'ocp-apim-subscription-key', 'private_key', 'key', 'X-Auth-Token', 'cookie']) {
      expect(isSecretKey(key), key).toBe(true);
    }
    for (const key of ['model', 'maxTokens', 'maxOutputTokens', 'topK', 'baseURL', 'keyword', 'author', 'monkey', 'embeddingModel']) expect(isSecretKey(key), key).toBe(false);
  });

  it('seals every header value and secret-looking key at any depth, masks them, and opens them again', () => {
    const b = box();
    const conf = { model: 'm', maxTokens: 100, apiKey: 'sk-1', headers: { Authorization: 'Bearer sk-head', 'x-trace': 'abc' }, queryParams: { 'api-key': 'q-secret', region: 'eu' }, nested: [{ clientSecret: 's-1' }] };
    const sealed = sealSecrets(b, conf, ['apiKey']);
    expect(JSON.stringify(sealed)).not.toMatch(/sk-1|sk-head|abc|q-secret|s-1/);
    expect(sealed).toMatchObject({ model: 'm', maxTokens: 100, queryParams: { region: 'eu' } });
    expect(isSealed((sealed.headers as Record<string, unknown>).Authorization)).toBe(true);
    expect(maskConf(sealed)).toEqual({
      model: 'm',
      maxTokens: 100,
      apiKey: SECRET_MASK,
      headers: { Authorization: SECRET_MASK, 'x-trace': SECRET_MASK },
      queryParams: { 'api-key': SECRET_MASK, region: 'eu' },
      nested: [{ clientSecret: SECRET_MASK }],
    });
    // Plain secrets of rows written before (not sealed) are masked just the same.
    expect(maskConf({ headers: { 'x-api-key': 'plain' } })).toEqual({ headers: { 'x-api-key': SECRET_MASK } });
    expect(openSecrets(b, sealed)).toEqual(conf);
    expect(openSecrets(b, { headers: { Authorization: 'Bearer legacy' } })).toEqual({ headers: { Authorization: 'Bearer legacy' } });
    expect(secretTexts(conf, ['apiKey'])).toEqual(expect.arrayContaining(['Bearer sk-head', 'sk-head', 'q-secret']));
  });

  it('keeps the stored secret where the mask comes back, and drops a mask with nothing behind it', () => {
    const previous = { headers: { Authorization: 'enc:v1:k1:AAAA' } };
    expect(keepMaskedSecrets({ headers: { Authorization: SECRET_MASK, 'x-api-key': SECRET_MASK } }, previous)).toEqual({ headers: { Authorization: 'enc:v1:k1:AAAA' } });
  });
});
