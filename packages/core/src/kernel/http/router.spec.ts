import { describe, expect, it } from 'vitest';
import { Router } from './router.js';

describe('Router', () => {
  const router = new Router<string>();
  router.add('GET', '/teams', 'list');
  router.add('POST', '/teams', 'create');
  router.add('GET', '/teams/:teamId', 'get');
  router.add('GET', '/teams/:teamId/members', 'members');
  router.add('GET', '/teams/mine', 'static-wins');
  router.add('DELETE', '/teams/:teamId/members/:userId', 'remove');

  it('matches static paths by method and ignores one trailing slash', () => {
    expect(router.find('GET', '/teams')).toEqual({ value: 'list', params: {} });
    expect(router.find('POST', '/teams/')).toEqual({ value: 'create', params: {} });
  });

  it('extracts and decodes parameters', () => {
    expect(router.find('GET', '/teams/a%20b')).toEqual({ value: 'get', params: { teamId: 'a b' } });
    expect(router.find('DELETE', '/teams/t1/members/u2')).toEqual({ value: 'remove', params: { teamId: 't1', userId: 'u2' } });
  });

  it('prefers a static segment over a parameter', () => {
    expect(router.find('GET', '/teams/mine')).toEqual({ value: 'static-wins', params: {} });
  });

  it('reports the allowed methods of a known path, and null for an unknown one', () => {
    expect(router.find('PUT', '/teams')).toEqual({ allowed: ['GET', 'POST'] });
    expect(router.find('PUT', '/teams/x')).toEqual({ allowed: ['GET'] });
    expect(router.find('GET', '/nothing')).toBeNull();
    expect(router.find('GET', '/teams//members')).toBeNull();
  });

  it('treats malformed percent-encoding as no match', () => {
    expect(router.find('GET', '/teams/%E0%A4%A')).toBeNull();
  });

  it('lets routes name the same position differently', () => {
    const r = new Router<string>();
    r.add('POST', '/documents/:documentId/edit', 'edit');
    r.add('POST', '/documents/:projectId/duplicate', 'duplicate');
    expect(r.find('POST', '/documents/p1/duplicate')).toEqual({ value: 'duplicate', params: { projectId: 'p1' } });
    expect(r.find('POST', '/documents/d1/edit')).toEqual({ value: 'edit', params: { documentId: 'd1' } });
  });

  it('backtracks parameter values when a static branch fails deeper down', () => {
    const r = new Router<string>();
    r.add('GET', '/a/:x/c', 'param');
    r.add('GET', '/a/b/d', 'static');
    expect(r.find('GET', '/a/b/c')).toEqual({ value: 'param', params: { x: 'b' } });
  });

  it('refuses duplicate routes and repeated parameter names', () => {
    expect(() => router.add('GET', '/teams', 'again')).toThrow(/Duplicate route/);
    expect(() => router.add('GET', '/teams/:id', 'again')).toThrow(/Duplicate route/);
    expect(() => router.add('GET', '/x/:id/y/:id', 'twice')).toThrow(/repeats/);
  });
});
