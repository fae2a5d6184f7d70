import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { SecretBox, isSealed, SECRET_MASK } from './secret-box.js';
import { maskConf } from './secret-fields.js';

const key = () => randomBytes(32);

describe('SecretBox (AES-256-GCM)', () => {
  it('round-trips values of every JSON type and never repeats a ciphertext', () => {
    const box = new SecretBox('k1', new Map([['k1', key()]]));
    for (const value of ['sk-123', 42, { token: 'x', nested: [1, 2] }]) {
      const sealed = box.seal(value);
      expect(isSealed(sealed)).toBe(true);
      expect(sealed.startsWith('enc:v1:k1:')).toBe(true);
      expect(sealed).not.toContain('sk-123');
      expect(box.open(sealed)).toEqual(value);
    }
    expect(box.seal('same')).not.toBe(box.seal('same'));
  });

  it('opens values of an old key after a rotation and seals with the new one', () => {
    const oldKey = key();
    const before = new SecretBox('k1', new Map([['k1', oldKey]]));
    const sealed = before.seal('sk-old');
    const after = new SecretBox('k2', new Map([['k1', oldKey], ['k2', key()]]));
    expect(after.open(sealed)).toBe('sk-old');
    expect(SecretBox.keyIdOf(after.seal('x'))).toBe('k2');
    const without = new SecretBox('k2', new Map([['k2', key()]]));
    expect(() => without.open(sealed)).toThrow(expect.objectContaining({ code: 'secret_key_missing' }));
  });

  it('refuses a tampered value or the wrong key', () => {
    const box = new SecretBox('k1', new Map([['k1', key()]]));
    const sealed = box.seal('sk-1');
    const flipped = sealed.slice(0, -2) + (sealed.at(-2) === 'A' ? 'B' : 'A') + sealed.at(-1);
    expect(() => box.open(flipped)).toThrow(expect.objectContaining({ code: 'secret_unreadable' }));
    const other = new SecretBox('k1', new Map([['k1', key()]]));
    expect(() => other.open(sealed)).toThrow(expect.objectContaining({ code: 'secret_unreadable' }));
  });

  it('masks sealed values and secret keys, leaves the rest', () => {
    const box = new SecretBox('k1', new Map([['k1', key()]]));
    expect(maskConf({ apiKey: 'plain', token: box.seal('t'), model: 'gpt', empty: '' })).toEqual({ apiKey: SECRET_MASK, token: SECRET_MASK, model: 'gpt', empty: '' });
    expect(maskConf({ secret: 'x' }, ['secret'])).toEqual({ secret: SECRET_MASK });
  });
});
