import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { actor, createProject, type Actor } from './documents.fixtures.js';
import { wf } from './runs.fixtures.js';
import { authorize, discover, exchange, type AdminApp, type OAuthTestHost } from './oauth-helpers.js';
import { contractFetch } from './support/contract-fetch.js';

/** Nothing listens there: the test reads the code from the redirect the consent answers. */
const REDIRECT_URI = 'http://127.0.0.1:9/mcp-callback';

/** The SDK client's OAuth state, in memory, as a desktop MCP client keeps it. */
class MemoryOAuthProvider implements OAuthClientProvider {
  client?: OAuthClientInformationMixed;
  saved?: OAuthTokens;
  verifier = '';
  authorizationUrl?: URL;
  readonly redirectUrl = REDIRECT_URI;
  readonly clientMetadata: OAuthClientMetadata = {
    client_name: 'Stock MCP client',
    redirect_uris: [REDIRECT_URI],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
    scope: 'mcp:tools',
  };
  state = () => 'state-' + Math.random().toString(36).slice(2);
  clientInformation = () => this.client;
  saveClientInformation = (info: OAuthClientInformationMixed) => void (this.client = info);
  tokens = () => this.saved;
  saveTokens = (tokens: OAuthTokens) => void (this.saved = tokens);
  redirectToAuthorization = (url: URL) => void (this.authorizationUrl = url);
  saveCodeVerifier = (verifier: string) => void (this.verifier = verifier);
  codeVerifier = () => this.verifier;
}

/**
 * The MCP server at /mcp over real sockets: the SDK's own client lists and calls a deployed
 * block (progress notifications from its streamed chunks) with an API key, a deployment token,
 * and after the full OAuth dance (protected-resource metadata, dynamic registration, PKCE
 * authorization, token) that the SDK client's OAuth support runs by itself. Every response is
 * checked against /openapi.json.
 */
describe.each(testDatabases())('MCP server on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let owner: Actor;
    let blockId: string;
    let hiddenId: string;
    let deploymentToken: string;
    const checked = { count: 0 };

    async function connect(options: { bearer?: string; authProvider?: OAuthClientProvider } = {}): Promise<Client> {
      const client = new Client({ name: 'trellis-test', version: '1.0.0' });
      const transportOptions = {
        fetch: contractFetch(t.contract, checked),
        ...(options.bearer ? { requestInit: { headers: { authorization: `Bearer ${options.bearer}` } } } : {}),
        ...(options.authProvider ? { authProvider: options.authProvider } : {}),
      };
      await client.connect(new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), transportOptions));
      return client;
    }

    async function deployedBlock(projectId: string, name: string, mcp: boolean, access = 'token'): Promise<{ id: string; token?: string }> {
      const block = await t.request('POST', `/block/${projectId}`, {
        token: owner.token,
        body: { name, type: 'workflow', description: 'Greets someone by name.', content: wf.doc(wf.input('name', { required: true, description: 'Who to greet' }), wf.code('greet', "emit('Hello, '); emit(inputs.name); return 'Hello, ' + inputs.name + '!';"), wf.output('out', '{{ greet }}')) },
      });
      expect(block.status, block.text).toBe(201);
      const deployed = await t.request('POST', `/block/${block.body.id}/deploy`, { token: owner.token, body: { access } });
      expect(deployed.status, deployed.text).toBe(201);
      if (mcp) {
        const set = await t.request('PUT', `/block/${block.body.id}/mcp`, { token: owner.token, body: { enabled: true } });
        expect(set.status, set.text).toBe(200);
        expect(set.body).toEqual({ blockId: block.body.id, enabled: true });
      }
      return { id: block.body.id, token: deployed.body.deploymentToken };
    }

    beforeAll(async () => {
      t = await startTestHost(db, transport);
      owner = await actor(t);
      const project = await createProject(t, owner.token, { access: 'private' });
      const shown = await deployedBlock(project.id, 'Greeter', true);
      blockId = shown.id;
      deploymentToken = shown.token!;
      hiddenId = (await deployedBlock(project.id, 'Not a tool', false)).id;
    });
    afterAll(() => t?.close());

    it('the SDK client lists the blocks that opted in and calls one; its chunks arrive as progress notifications', async () => {
      const client = await connect({ bearer: owner.apiKey });
      try {
        const { tools } = await client.listTools();
        expect(tools).toEqual([
          expect.objectContaining({
            name: 'greeter',
            title: 'Greeter',
            description: 'Greets someone by name.',
            inputSchema: { type: 'object', properties: { name: { type: 'string', description: 'Who to greet' } }, required: ['name'] },
          }),
        ]);
        const progress: Array<{ progress: number; message?: string }> = [];
        const result = await client.callTool({ name: 'greeter', arguments: { name: 'Ada' } }, undefined, { onprogress: (p) => progress.push(p) });
        expect(result.isError).toBeFalsy();
        expect(result.content).toEqual([{ type: 'text', text: 'Hello, Ada!' }]);
        expect(progress).toEqual([
          { progress: 1, message: 'Hello, ' },
          { progress: 2, message: 'Ada' },
        ]);
        // An ordinary run of the deployment, recorded with its version.
        const runId = (result._meta as Record<string, string>)['trellis/runId'];
        const run = await t.request('GET', `/documents/${blockId}/runs/${runId}`, { token: owner.token });
        expect(run.body).toMatchObject({ source: 'mcp', version: '1', status: 'completed', inputs: { name: 'Ada' } });

        const refused = await client.callTool({ name: 'greeter', arguments: { name: 42 } });
        expect(refused.isError).toBe(true);
        expect(JSON.stringify(refused.content)).toContain('invalid_inputs');
        await expect(client.callTool({ name: 'not_a_tool', arguments: {} })).rejects.toThrow(/No tool named not_a_tool/);
      } finally {
        await client.close();
      }
      // Switched off: no longer offered.
      expect((await t.request('PUT', `/block/${blockId}/mcp`, { token: owner.token, body: { enabled: false } })).body.enabled).toBe(false);
      const again = await connect({ bearer: owner.apiKey });
      expect((await again.listTools()).tools).toEqual([]);
      await again.close();
      expect((await t.request('PUT', `/block/${blockId}/mcp`, { token: owner.token, body: { enabled: true } })).status).toBe(200);
      expect((await t.request('GET', `/block/${hiddenId}/mcp`, { token: owner.token })).body).toEqual({ blockId: hiddenId, enabled: false });
    });

    it('a deployment token is a bearer for its own deployment; a stranger sees no tool', async () => {
      const client = await connect({ bearer: deploymentToken });
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['greeter']);
      const result = await client.callTool({ name: 'greeter', arguments: { name: 'Grace' } });
      expect(result.content).toEqual([{ type: 'text', text: 'Hello, Grace!' }]);
      await client.close();
      const stranger = await actor(t);
      const theirs = await connect({ bearer: stranger.apiKey });
      expect((await theirs.listTools()).tools).toEqual([]);
      await theirs.close();
      const foreign = await t.request('PUT', `/block/${blockId}/mcp`, { token: stranger.token, body: { enabled: false } });
      expect(foreign.status).toBe(404);
    });

    it('without a credential: 401 naming the protected-resource metadata, which names the authorization server', async () => {
      const checkedFetch = contractFetch(t.contract, checked);
      const bare = await checkedFetch(`${t.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) });
      expect(bare.status).toBe(401);
      const challenge = bare.headers.get('www-authenticate')!;
      expect(challenge).toContain(`resource_metadata="${t.url}/.well-known/oauth-protected-resource/mcp"`);
      expect(await bare.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32001, data: { error: 'missing_credentials' } }, id: null });
      const metadata = await t.request('GET', '/.well-known/oauth-protected-resource/mcp');
      expect(metadata.body).toMatchObject({ resource: `${t.url}/mcp`, authorization_servers: [t.url], scopes_supported: ['mcp:tools'] });
      const as = await t.request('GET', '/.well-known/oauth-authorization-server');
      expect(as.body.registration_endpoint).toBe(`${t.url}/oauth/register`);
      const wrong = await checkedFetch(`${t.url}/mcp`, { method: 'POST', headers: { authorization: 'Bearer trk_nope', 'content-type': 'application/json' }, body: '{}' });
      expect(wrong.status).toBe(401);
      expect(wrong.headers.get('www-authenticate')).toContain('error="invalid_token"');
      expect((await t.request('GET', '/mcp')).status).toBe(405);
    });

    it('a stock MCP client does the OAuth dance by itself: metadata, dynamic registration, PKCE authorization, token, then lists and calls', async () => {
      const provider = new MemoryOAuthProvider();
      await expect(connect({ authProvider: provider })).rejects.toBeInstanceOf(UnauthorizedError);
      // It registered itself (RFC 7591) and sent the user to the authorization endpoint with PKCE.
      expect(provider.client?.client_id).toBeTruthy();
      const url = provider.authorizationUrl!;
      expect(url.pathname).toBe('/oauth/authorize');
      expect(url.searchParams.get('code_challenge_method')).toBe('S256');
      expect(url.searchParams.get('client_id')).toBe(provider.client!.client_id);
      // The user's browser: the consent page, then the user's approval.
      const start = await t.request('GET', `${url.pathname}${url.search}`);
      expect(start.status, start.text).toBe(302);
      const consent = new URL(start.headers.get('location')!);
      const approval: Record<string, string> = {};
      for (const name of ['client_id', 'redirect_uri', 'scope', 'state', 'code_challenge', 'code_challenge_method']) {
        const value = consent.searchParams.get(name);
        if (value !== null) approval[name] = value;
      }
      expect(approval.scope).toBe('mcp:tools');
      const confirmed = await t.request('POST', '/oauth/authorize', { token: owner.token, body: approval });
      expect(confirmed.status, confirmed.text).toBe(200);
      const code = new URL(confirmed.body.redirectTo).searchParams.get('code')!;
      const finishing = new StreamableHTTPClientTransport(new URL(`${t.url}/mcp`), { authProvider: provider, fetch: contractFetch(t.contract, checked) });
      await finishing.finishAuth(code);
      expect(provider.saved?.access_token).toMatch(/^toa_/);
      expect(provider.saved?.scope).toBe('mcp:tools');

      const client = await connect({ authProvider: provider });
      expect((await client.listTools()).tools.map((tool) => tool.name)).toEqual(['greeter']);
      const result = await client.callTool({ name: 'greeter', arguments: { name: 'Lin' } });
      expect(result.content).toEqual([{ type: 'text', text: 'Hello, Lin!' }]);
      await client.close();
      expect(checked.count).toBeGreaterThan(10);
    });

    it('an OAuth token without mcp:tools (oauth4webapi: registration, PKCE, token) is refused with 403 insufficient_scope', async () => {
      const registered = await t.request('POST', '/oauth/register', { body: { redirect_uris: [REDIRECT_URI], client_name: 'Profile reader', scope: 'profile:read' } });
      expect(registered.status).toBe(201);
      const app = { client_id: registered.body.client_id, redirect_uris: [REDIRECT_URI], scopes: ['profile:read'] } as AdminApp;
      const flow = await authorize(t as OAuthTestHost, app, owner.token);
      const tokens = await exchange(await discover(t), app, flow);
      expect(tokens.scope).toBe('profile:read');
      const refused = await contractFetch(t.contract, checked)(`${t.url}/mcp`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tokens.access_token}`, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
      });
      expect(refused.status).toBe(403);
      expect(await refused.json()).toMatchObject({ error: { data: { error: 'insufficient_scope' } } });
    });

    it('dynamic registration refuses clients it cannot register, in RFC 7591 terms', async () => {
      const register = (body: unknown) => t.request('POST', '/oauth/register', { body });
      const ok = await register({ redirect_uris: [REDIRECT_URI], client_name: 'Agent' });
      expect(ok.status).toBe(201);
      expect(ok.body).toMatchObject({ client_name: 'Agent', token_endpoint_auth_method: 'none', scope: 'mcp:tools', redirect_uris: [REDIRECT_URI] });
      expect((await register({ redirect_uris: ['http://example.com/cb'] })).body).toMatchObject({ error: 'invalid_redirect_uri' });
      expect((await register({ redirect_uris: [REDIRECT_URI], scope: 'mobile:full' })).body).toMatchObject({ error: 'invalid_client_metadata' });
      expect((await register({ redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'client_secret_basic' })).body).toMatchObject({ error: 'invalid_client_metadata' });
      const bad = await register({ redirect_uris: 'nope' });
      expect(bad.status).toBe(400);
      expect(bad.body.error).toBe('invalid_client_metadata');
    });
  });
});

describe.each(testDatabases())('MCP with dynamic registration switched off on $name', (db) => {
  let t: TestHost;
  beforeAll(async () => {
    t = await startTestHost(db, 'node', { config: { oauth: { dynamicRegistration: { enabled: false } } } });
  });
  afterAll(() => t?.close());

  it('answers 403 access_denied and leaves registration_endpoint out of the metadata', async () => {
    const refused = await t.request('POST', '/oauth/register', { body: { redirect_uris: [REDIRECT_URI] } });
    expect(refused.status).toBe(403);
    expect(refused.body.error).toBe('access_denied');
    const metadata = await t.request('GET', '/.well-known/oauth-authorization-server');
    expect(metadata.body.registration_endpoint).toBeUndefined();
  });
});
