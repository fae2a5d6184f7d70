import { describe, expect, it } from 'vitest';
import { generateClientId } from './oauth-app.service.js';

describe('generated client_id', () => {
  it('is 22 base64url characters that begin with a letter or digit', () => {
    // Before the fix about one id in 32 began with `-` or `_`: 4,000 draws miss that with odds ~1e-55.
    const ids = Array.from({ length: 4000 }, generateClientId);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9][A-Za-z0-9_-]{21}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
