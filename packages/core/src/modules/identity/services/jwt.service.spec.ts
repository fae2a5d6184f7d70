import { createHmac } from 'node:crypto';
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import type { TrellisConfig } from '../../../kernel/config/config.js';
import { TrellisError } from '../../../kernel/errors.js';
import { JwtService } from './jwt.service.js';

const secret = 'unit-secret-unit-secret-unit-secret-0123';
const key = new TextEncoder().encode(secret);
const issuer = 'trellis-unit';
const service = new JwtService({ auth: { jwtSecret: secret, jwtIssuer: issuer, jwtTtlSeconds: 900 } } as unknown as TrellisConfig);
const now = () => Math.floor(Date.now() / 1000);

const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
/** A compact JWS over any header and payload, signed with `signingKey` (HMAC-SHA256). */
const forge = (header: unknown, payload: unknown, signingKey = secret) => {
  const input = `${b64(header)}.${b64(payload)}`;
  return `${input}.${createHmac('sha256', signingKey).update(input).digest('base64url')}`;
};

/** What jose says of a token with the options JwtService used before: ok, expired or invalid. */
async function joseVerdict(token: string): Promise<'ok' | 'expired' | 'invalid'> {
  try {
    const { payload } = await jwtVerify(token, key, { issuer, algorithms: ['HS256'] });
    return typeof payload.sub === 'string' && typeof payload.exp === 'number' ? 'ok' : 'invalid';
  } catch (error) {
    return error instanceof joseErrors.JWTExpired ? 'expired' : 'invalid';
  }
}

async function ourVerdict(token: string): Promise<'ok' | 'expired' | 'invalid'> {
  try {
    await service.verify(token);
    return 'ok';
  } catch (error) {
    if (!(error instanceof TrellisError) || error.status !== 401) throw error;
    return error.code === 'token_expired' ? 'expired' : 'invalid';
  }
}

describe('JwtService verification (node:crypto HMAC)', () => {
  const header = { alg: 'HS256', typ: 'JWT' };
  const claims = () => ({ sub: 'user-1', iss: issuer, jti: 'j1', iat: now(), exp: now() + 60 });

  it('accepts its own tokens and reads sub, jti, iat, exp and act', async () => {
    const { token } = await service.sign('user-1', { actorId: 'admin-1', ttlSeconds: 60 });
    const verified = await service.verify(token);
    expect(verified).toMatchObject({ sub: 'user-1', act: { sub: 'admin-1' } });
    expect(verified.exp - verified.iat).toBe(60);
    expect(verified.jti).toMatch(/.+/);
  });

  const cases: Array<[string, () => string]> = [
    ['a valid token', () => forge(header, claims())],
    ['a valid token without typ', () => forge({ alg: 'HS256' }, claims())],
    ['a token signed with another secret', () => forge(header, claims(), 'another-secret-another-secret-another-00')],
    ['a tampered payload', () => {
      const [h, , s] = forge(header, claims()).split('.');
      return `${h}.${b64({ ...claims(), sub: 'admin' })}.${s}`;
    }],
    ['a truncated signature', () => forge(header, claims()).slice(0, -2)],
    ['alg none', () => `${b64({ alg: 'none' })}.${b64(claims())}.`],
    ['alg HS512 signed as HS256', () => forge({ alg: 'HS512' }, claims())],
    ['alg hs256 (case)', () => forge({ alg: 'hs256' }, claims())],
    ['a crit header', () => forge({ alg: 'HS256', crit: ['exp'], exp: 1 }, claims())],
    ['b64 false with crit', () => forge({ alg: 'HS256', crit: ['b64'], b64: false }, claims())],
    ['a header that is not an object', () => forge(['HS256'], claims())],
    ['a payload that is an array', () => forge(header, [claims()])],
    ['a payload that is not JSON', () => forge(header, 'not json')],
    ['another issuer', () => forge(header, { ...claims(), iss: 'someone-else' })],
    ['no issuer', () => forge(header, { ...claims(), iss: undefined })],
    ['an issuer array', () => forge(header, { ...claims(), iss: [issuer] })],
    ['expired', () => forge(header, { ...claims(), exp: now() - 1 })],
    ['expiring this second', () => forge(header, { ...claims(), exp: now() })],
    ['exp as a string', () => forge(header, { ...claims(), exp: String(now() + 60) })],
    ['no exp', () => forge(header, { ...claims(), exp: undefined })],
    ['no sub', () => forge(header, { ...claims(), sub: undefined })],
    ['sub as a number', () => forge(header, { ...claims(), sub: 42 })],
    ['iat as a string', () => forge(header, { ...claims(), iat: 'yesterday' })],
    ['nbf in the future', () => forge(header, { ...claims(), nbf: now() + 30 })],
    ['nbf now', () => forge(header, { ...claims(), nbf: now() })],
    ['nbf as a string', () => forge(header, { ...claims(), nbf: '0' })],
    ['expired and badly signed', () => forge(header, { ...claims(), exp: now() - 5 }, 'another-secret-another-secret-another-00')],
    ['four parts', () => `${forge(header, claims())}.x`],
    ['two parts', () => forge(header, claims()).split('.').slice(0, 2).join('.')],
    ['invalid UTF-8 in the payload', () => {
      const input = `${b64(header)}.${Buffer.from([0x7b, 0xff, 0x7d]).toString('base64url')}`;
      return `${input}.${createHmac('sha256', secret).update(input).digest('base64url')}`;
    }],
  ];

  it.each(cases)('decides as jose would: %s', async (_name, make) => {
    const token = make();
    expect(await ourVerdict(token)).toBe(await joseVerdict(token));
  });

  it('refuses base64 padding, which jose tolerates (the JWT verifier refuses such tokens by shape before)', async () => {
    expect(await ourVerdict(`${forge(header, claims())}=`)).toBe('invalid');
  });

  it('says why: token_expired for an expired token, invalid_token otherwise, with the Bearer challenge', async () => {
    const error = await service.verify(forge(header, { ...claims(), exp: now() - 1 })).catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 401, code: 'token_expired' });
    const bad = await service.verify(forge({ alg: 'none' }, claims())).catch((e: unknown) => e);
    expect(bad).toMatchObject({ status: 401, code: 'invalid_token' });
    expect((bad as TrellisError).headers).toMatchObject({ 'www-authenticate': 'Bearer error="invalid_token"' });
  });

  it('verifies what jose signs and jose verifies what it signs', async () => {
    const joseToken = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('u').setIssuer(issuer).setIssuedAt().setExpirationTime('1m').sign(key);
    expect((await service.verify(joseToken)).sub).toBe('u');
    const { token } = await service.sign('u2');
    expect((await jwtVerify(token, key, { issuer, algorithms: ['HS256'] })).payload.sub).toBe('u2');
  });
});
