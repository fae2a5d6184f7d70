import { readFileSync } from 'node:fs';
import { allCredentialKinds, credentialRule, credentialRules, UserService } from '@trellis/core';
import { startTestHost, testDatabases, type TestHost } from '@trellis/test-support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { actor, createProject, type Actor } from './documents.fixtures.js';
import { wf } from './runs.fixtures.js';

/**
 * The rules the HTTP edge applies the same way on every route (docs/http/README.md): which
 * credential kinds a route with optional authentication takes, what an explicit `null` means, and
 * what a validation failure says. Every answer is checked against /openapi.json.
 */

type Json = Record<string, any>;
let counter = 0;

describe.each(testDatabases())('edge rules on $name', (db) => {
  let t: TestHost;
  let owner: Actor;
  let outsider: Actor;
  let projectId: string;
  /** Device tokens of the owner (a hardware device and an application), and an anonymous tool-service token. */
  const foreignKinds: Array<[string, string]> = [];

  beforeAll(async () => {
    t = await startTestHost(db, 'node');
    owner = await actor(t);
    outsider = await actor(t);
    await t.kernel.get(UserService).update(t.kernel.fork(), owner.userId, { isDeveloper: true });
    projectId = (await createProject(t, owner.token, { access: 'private' })).id;
    for (const type of ['hardware', 'app']) {
      const device = await t.request('POST', `/dev/${type}`, { token: owner.token, body: { name: `${type} ${++counter}` } });
      expect(device.status, device.text).toBe(201);
      const issued = await t.request('POST', `/dev/${type}/${device.body.id}/token`, { token: owner.token });
      expect(issued.status, issued.text).toBe(201);
      foreignKinds.push([`${type} device token`, issued.body.token]);
    }
    const anonymous = await t.request('POST', '/tool/home/oauth/anonymous', { body: { anonymous: `edge-${Date.now()}-${counter}`, passwd: 'a long secret' } });
    expect(anonymous.status, anonymous.text).toBe(200);
    foreignKinds.push(['anonymous tool-service token', anonymous.body.access_token]);
  });
  afterAll(() => t?.close());

  async function deployed(access: string): Promise<{ bid: string; deploymentToken?: string }> {
    const content = wf.doc(wf.input('n', { type: 'number' }), wf.output('out', `${access}:{{ n }}`));
    const block = await t.request('POST', `/block/${projectId}`, { token: owner.token, body: { name: `Flow ${++counter}`, type: 'workflow', content } });
    expect(block.status, block.text).toBe(201);
    const deploy = await t.request('POST', `/block/${block.body.id}/deploy`, { token: owner.token, body: { access } });
    expect(deploy.status, deploy.text).toBe(201);
    return { bid: block.body.id, deploymentToken: deploy.body.deploymentToken ?? undefined };
  }

  const call = (bid: string, who: { token?: string; deploymentToken?: string } = {}) =>
    t.request('POST', `/block/${bid}/api`, {
      ...(who.token ? { token: who.token } : {}),
      ...(who.deploymentToken ? { headers: { 'x-deployment-token': who.deploymentToken } } : {}),
      body: { stream: false, inputs: { n: 1 } },
    });

  const runCount = async () => {
    const r = await t.request('GET', `/project/${projectId}/runs?size=100`, { token: owner.token });
    expect(r.status).toBe(200);
    return r.body.total as number;
  };

  const scopedKey = async (who: Actor, scopes: string[]) => {
    const r = await t.request('POST', '/auth/api-keys', { token: who.token, body: { name: `scoped ${++counter}`, scopes } });
    expect(r.status, r.text).toBe(201);
    return r.body.token as string;
  };

  describe('credential kinds on POST /block/{bid}/api', () => {
    it('refuses device and anonymous tool-service tokens with 403, whatever the access, and runs nothing', async () => {
      const before = await runCount();
      for (const access of ['private', 'team', 'token', 'public']) {
        const { bid, deploymentToken } = await deployed(access);
        for (const [kind, token] of foreignKinds) {
          for (const r of [await call(bid, { token }), await call(bid, { token, deploymentToken })]) {
            expect([r.status, r.body.error], `${kind} on a ${access} deployment`).toEqual([403, 'credential_not_allowed']);
          }
        }
        // The kinds the route accepts still run it.
        expect((await call(bid, { token: owner.apiKey })).status).toBe(200);
      }
      // Four deployments, one accepted call each: nothing ran on a device's or a tool token's behalf.
      expect(await runCount()).toBe(before + 4);
    });

    it('lets a valid deployment token through with a scoped credential that does not reach the route, as it does alone', async () => {
      const { bid, deploymentToken } = await deployed('token');
      const narrow = await scopedKey(outsider, ['profile:read']);
      const alone = await call(bid, { deploymentToken });
      expect(alone.status, alone.text).toBe(200);
      const withKey = await call(bid, { token: narrow, deploymentToken });
      expect(withKey.status, withKey.text).toBe(200);
      expect(withKey.body.output).toBe('token:1');
      // Without the deployment token the credential is what counts: its scope is the refusal.
      const keyOnly = await call(bid, { token: narrow });
      expect([keyOnly.status, keyOnly.body.error]).toEqual([403, 'insufficient_scope']);
      // The owner's own narrow key on a private deployment: the scope, not "send a credential".
      const { bid: privateBid } = await deployed('private');
      const ownNarrow = await call(privateBid, { token: await scopedKey(owner, ['profile:read']) });
      expect([ownNarrow.status, ownNarrow.body.error]).toEqual([403, 'insufficient_scope']);
      // A key with the route's scope runs as itself.
      const wide = await call(privateBid, { token: await scopedKey(owner, ['documents:write']) });
      expect(wide.status, wide.text).toBe(200);
    });

    it('answers an outsider 404 on a token deployment, as on private and team ones (no existence leak)', async () => {
      for (const access of ['private', 'team', 'token']) {
        const { bid } = await deployed(access);
        for (const who of [{ token: outsider.token }, { token: outsider.apiKey, deploymentToken: 'trd_wrong' }]) {
          const r = await call(bid, who);
          expect([r.status, r.body.error], access).toEqual([404, 'block_not_found']);
        }
        const anonymous = await call(bid);
        expect([anonymous.status, anonymous.body.error], access).toEqual([401, 'authentication_required']);
      }
    });
  });

  describe('the credential table', () => {
    const readme = readFileSync(new URL('../../../docs/http/README.md', import.meta.url), 'utf8');
    /** The rows of the markdown table whose header starts with `header`. */
    const table = (header: string): string[][] => {
      const lines = readme.split('\n');
      const start = lines.findIndex((line) => line.startsWith(`| ${header} |`));
      expect(start, `a table headed "${header}" in docs/http/README.md`).toBeGreaterThan(-1);
      const rows: string[][] = [];
      for (const line of lines.slice(start + 2)) {
        if (!line.startsWith('|')) break;
        rows.push(line.split('|').slice(1, -1).map((cell) => cell.trim()));
      }
      return rows;
    };

    it('in docs/http/README.md is the table the dispatcher applies', () => {
      const spelled: Record<string, string> = {
        anonymous: 'anonymous',
        principal: 'principal',
        setAside: 'set aside',
        missing_credentials: '401 missing_credentials',
        invalid_token: '401 invalid_token',
        credential_not_allowed: '403 credential_not_allowed',
        insufficient_scope: '403 insufficient_scope',
      };
      const documented = table('rule');
      const cases = ['absent', 'invalid', 'otherKind', 'scopeShort', 'accepted'] as const;
      expect(documented.map((row) => row[0])).toEqual(Object.keys(credentialRules));
      for (const row of documented) {
        const rule = credentialRules[row[0] as keyof typeof credentialRules];
        expect(row.slice(1), row[0]).toEqual(cases.map((c) => spelled[rule[c]]));
      }
    });

    it('lists every route with optional authentication and the kinds it accepts', () => {
      const documented = table('route').map(([route, kinds]) => [route, kinds]);
      const optional = t.kernel.routes.flatMap((route) => {
        const rule = credentialRule(route.auth);
        if (!rule || rule.required) return [];
        const kinds = allCredentialKinds.every((kind) => rule.kinds.includes(kind)) ? 'every kind' : rule.kinds.join(', ');
        return [[`\`${route.method} ${route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}\``, kinds]];
      });
      expect(optional.sort()).toEqual(documented.sort());
    });
  });

  describe('explicit null in an optional field', () => {
    const refusedNull = (r: { status: number; body: Json }, field: string) => {
      expect(r.status, JSON.stringify(r.body)).toBe(r.status === 400 ? 400 : 422);
      expect(r.body.details).toContainEqual({ field, constraint: 'isNotNull', message: 'must not be null (leave the field out instead)' });
    };

    it('is refused on existing resources before any handler sees it', async () => {
      refusedNull(await t.request('PUT', `/project/${projectId}`, { token: owner.token, body: { name: null } }), 'name');
      const { bid } = await deployed('private');
      refusedNull(await t.request('PUT', `/block/${bid}/deployment`, { token: owner.token, body: { inputs: null } }), 'inputs');
      for (const type of ['bot', 'conv']) {
        const body = type === 'conv' ? { title: 'c', config: null } : { name: 'b', config: null };
        refusedNull(await t.request('POST', `/dev/${type}`, { token: owner.token, body }), 'config');
      }
      // Nested DTOs too: an input definition's name.
      const nested = await t.request('PUT', `/block/${bid}/deployment`, { token: owner.token, body: { inputs: [{ name: null, type: 'string' }] } });
      refusedNull(nested, 'inputs.0.name');
      // Nothing changed.
      expect((await t.request('GET', `/project/${projectId}`, { token: owner.token })).body.name).toEqual(expect.any(String));
    });

    it('clears a field documented nullable', async () => {
      const set = await t.request('PATCH', '/auth/me', { token: owner.token, body: { avatarUrl: 'https://img.example/a.png' } });
      expect(set.status, set.text).toBe(200);
      const cleared = await t.request('PATCH', '/auth/me', { token: owner.token, body: { avatarUrl: null } });
      expect(cleared.status, cleared.text).toBe(200);
      expect(cleared.body.avatarUrl).toBeNull();
      const doc = (await t.request('GET', '/openapi.json')).body;
      // `null` joins the property's type (OpenAPI 3.1), the form the /docs renderer's checker accepts.
      expect(doc.components.schemas.UpdateProfileRequest.properties.avatarUrl.type).toEqual(['string', 'null']);
      expect(doc.components.schemas.UpdateProfileRequest.properties.name.type).toBe('string');
    });
  });

  describe('validation messages', () => {
    it('says a missing required field is required, not which of its other rules an absent value breaks', async () => {
      const project = await t.request('POST', '/project', { token: owner.token, body: { name: 'x' } });
      expect(project.status).toBe(422);
      expect(project.body.message).toBe('Invalid body: tools is required');
      expect(project.body.details).toEqual([
        { field: 'tools', constraint: 'isDefined', message: 'is required' },
        { field: 'access', constraint: 'isDefined', message: 'is required' },
      ]);

      const login = await t.request('POST', '/auth/login', { body: { email: owner.email } });
      expect(login.body.message).toBe('Invalid body: password is required');
      expect(login.body.details).toEqual([{ field: 'password', constraint: 'isDefined', message: 'is required' }]);

      // A present but wrong value still names the rule it breaks.
      const wrong = await t.request('POST', '/auth/login', { body: { email: owner.email, password: 'p'.repeat(1025) } });
      expect(wrong.body.details).toEqual([{ field: 'password', constraint: 'maxLength', message: 'must be shorter than or equal to 1024 characters' }]);
      // Null in a required field is named as such.
      const nullName = await t.request('POST', '/project', { token: owner.token, body: { name: null, tools: [], access: 'private' } });
      expect(nullName.body.details).toEqual([{ field: 'name', constraint: 'isNotNull', message: 'must not be null (leave the field out instead)' }]);
    });
  });
});
