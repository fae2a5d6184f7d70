import { describe, expect, it } from 'vitest';
import { parseScope } from './scopes.js';

describe('parseScope (RFC 6749 §3.3)', () => {
  it('splits on spaces, drops empty tokens and duplicates, keeps order', () => {
    expect(parseScope('profile:read  chat:completions profile:read')).toEqual(['profile:read', 'chat:completions']);
    expect(parseScope('')).toEqual([]);
  });

  it('refuses characters outside the scope-token syntax', () => {
    for (const bad of ['a"b', 'a\\b', 'tab\tsep', 'é']) expect(parseScope(bad), bad).toBeNull();
  });
});
