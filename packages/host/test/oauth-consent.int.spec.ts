import vm from 'node:vm';
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testDatabases, transports } from '@trellis/test-support';
import { authorizeQuery, discover, insecure, pkce, REDIRECT_URI, startOAuthHost, type AdminApp, type OAuthTestHost, type Pkce } from './oauth-helpers.js';

class FakeElement {
  hidden = false;
  textContent = '';
  value = '';
  src = '';
  children: FakeElement[] = [];
  listeners: Record<string, (event?: unknown) => unknown> = {};
  addEventListener(type: string, listener: (event?: unknown) => unknown) {
    this.listeners[type] = listener;
  }
  append(child: FakeElement) {
    this.children.push(child);
  }
  replaceChildren() {
    this.children = [];
  }
}

/**
 * Runs the built-in page's own script, as served, against the real server: a minimal stand-in
 * for the DOM (the elements the page has), `location`, `sessionStorage` and `window.opener`.
 */
function openPage(t: OAuthTestHost, html: string, consentUrl: string, storage: Map<string, string>, opener: { messages: Array<[unknown, string]> } | null = null) {
  const config = /<script type="application\/json" id="config">([\s\S]*?)<\/script>/.exec(html)![1]!;
  const script = /<script nonce="[^"]+">([\s\S]*?)<\/script>/.exec(html)![1]!;
  const elements = new Map<string, FakeElement>();
  for (const [, id] of html.matchAll(/ id="([a-z-]+)"/g)) elements.set(id!, new FakeElement());
  for (const [, id] of html.matchAll(/ id="([a-z-]+)"[^>]* hidden/g)) elements.get(id!)!.hidden = true;
  elements.get('config')!.textContent = config;
  const page = {
    assigned: null as string | null,
    closed: false,
    el: (id: string) => elements.get(id)!,
  };
  const context = vm.createContext({
    document: { getElementById: (id: string) => elements.get(id) ?? null, createElement: () => new FakeElement() },
    location: { search: new URL(consentUrl).search, assign: (url: string) => void (page.assigned = url) },
    sessionStorage: {
      getItem: (k: string) => storage.get(k) ?? null,
      setItem: (k: string, v: string) => void storage.set(k, v),
      removeItem: (k: string) => void storage.delete(k),
    },
    window: {
      opener: opener && { postMessage: (message: unknown, origin: string) => opener.messages.push([message, origin]) },
      close: () => void (page.closed = true),
    },
    fetch: (path: string, init?: RequestInit) => fetch(new URL(path, t.url), init),
    URL,
    URLSearchParams,
  });
  vm.runInContext(script, context);
  return page;
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(condition()).toBe(true);
}

// The built-in login and consent page, served when no frontendUrl is configured, completes the
// flow in a browser: its script runs here against the live server.
describe.each(testDatabases())('OAuth consent page on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: OAuthTestHost;
    let app: AdminApp;
    let user: { email: string; token: string };
    const password = 'correct horse battery';

    beforeAll(async () => {
      t = await startOAuthHost(db, transport);
      app = await t.createApp({ name: 'Notes <b>app</b>' });
      const registered = await t.register();
      user = { email: registered.email, token: registered.token };
    });
    afterAll(() => t?.close());

    /** GET /oauth/authorize, then the page it redirects to. */
    const start = async (overrides: Record<string, string | undefined> = {}) => {
      const p: Pkce = await pkce();
      const r = await t.request('GET', `/oauth/authorize?${authorizeQuery(app, p, overrides)}`);
      const consentUrl = r.headers.get('location')!;
      const html = await t.request('GET', new URL(consentUrl).pathname + new URL(consentUrl).search);
      return { p, consentUrl, html };
    };

    it('is served with a strict CSP, no framing, no referrer and no caching', async () => {
      const { html } = await start();
      expect(html.status).toBe(200);
      expect(html.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const csp = html.headers.get('content-security-policy')!;
      expect(csp).toMatch(/default-src 'none'/);
      expect(csp).toMatch(/script-src 'nonce-[A-Za-z0-9+/=]+'/);
      expect(csp).toMatch(/frame-ancestors 'none'/);
      expect(html.headers.get('x-frame-options')).toBe('DENY');
      expect(html.headers.get('referrer-policy')).toBe('no-referrer');
      expect(html.headers.get('cache-control')).toBe('no-store');
      const nonce = /'nonce-([^']+)'/.exec(csp)![1];
      expect(html.text).toContain(`<script nonce="${nonce}">`);
      expect(html.text).not.toMatch(/https?:\/\/(cdn|unpkg|fonts)/);
    });

    it('signs the user in, asks for consent and completes the flow with oauth4webapi', async () => {
      const storage = new Map<string, string>();
      const { p, consentUrl, html } = await start({ login_hint: user.email });
      const page = openPage(t, html.text, consentUrl, storage);
      await until(() => !page.el('login').hidden);
      expect(page.el('email').value).toBe(user.email);
      expect(page.el('app-name').textContent).toBe('Notes <b>app</b>'); // text, never markup
      page.el('password').value = 'wrong password';
      await page.el('login').listeners['submit']!({ preventDefault() {} });
      expect(page.el('error').hidden).toBe(false);
      expect(page.el('consent').hidden).toBe(true);
      page.el('password').value = password;
      await page.el('login').listeners['submit']!({ preventDefault() {} });
      expect(page.el('consent').hidden).toBe(false);
      expect(page.el('scopes').children.map((li) => li.textContent)).toEqual([expect.stringMatching(/name, email/)]);
      await page.el('allow').listeners['click']!();
      expect(page.assigned).toMatch(new RegExp(`^${REDIRECT_URI}\\?code=`));

      const as = await discover(t);
      const client = { client_id: app.client_id };
      const params = oauth.validateAuthResponse(as, client, new URL(page.assigned!), p.state);
      const tokens = await oauth.processAuthorizationCodeResponse(
        as,
        client,
        await oauth.authorizationCodeGrantRequest(as, client, oauth.None(), params, REDIRECT_URI, p.verifier, insecure),
      );
      expect(tokens.access_token).toMatch(/^toa_/);
    });

    it('reuses the tab\'s session, and sends the user back with access_denied on Deny', async () => {
      const storage = new Map<string, string>([['trellis.oauth.session', user.token]]);
      const { p, consentUrl, html } = await start();
      const page = openPage(t, html.text, consentUrl, storage);
      await until(() => !page.el('consent').hidden);
      expect(page.el('signed-in').textContent).toContain(user.email);
      await page.el('deny').listeners['click']!();
      const as = await discover(t);
      const error = (() => {
        try {
          oauth.validateAuthResponse(as, { client_id: app.client_id }, new URL(page.assigned!), p.state);
        } catch (caught) {
          return caught;
        }
      })();
      expect(error).toBeInstanceOf(oauth.AuthorizationResponseError);
      expect((error as oauth.AuthorizationResponseError).error).toBe('access_denied');
    });

    it('asks for a fresh login with prompt=login or select_account despite a session', async () => {
      for (const prompt of ['login', 'select_account']) {
        const storage = new Map<string, string>([['trellis.oauth.session', user.token]]);
        const { consentUrl, html } = await start({ prompt });
        const page = openPage(t, html.text, consentUrl, storage);
        await until(() => !page.el('login').hidden);
        expect(page.el('consent').hidden).toBe(true);
        expect(storage.has('trellis.oauth.session')).toBe(false);
      }
    });

    it('posts interaction_required to the opener for prompt=none in popup mode, to the redirect URI\'s origin only', async () => {
      const opener = { messages: [] as Array<[unknown, string]> };
      const { p, consentUrl, html } = await start({ prompt: 'none', display: 'popup' });
      const page = openPage(t, html.text, consentUrl, new Map(), opener);
      await until(() => opener.messages.length > 0);
      expect(opener.messages).toEqual([[{ error: 'interaction_required', error_description: expect.any(String), state: p.state, iss: t.url }, 'http://127.0.0.1:9']]);
      expect(page.closed).toBe(true);
      expect(page.assigned).toBeNull();
    });

    it('never sends the browser to a redirect URI the app has not registered', async () => {
      const { consentUrl, html } = await start();
      const tampered = new URL(consentUrl);
      tampered.searchParams.set('redirect_uri', 'https://evil.example/steal');
      const page = openPage(t, html.text, tampered.toString(), new Map([['trellis.oauth.session', user.token]]));
      await until(() => !page.el('error').hidden);
      expect(page.el('error').textContent).toMatch(/not registered/);
      await page.el('deny').listeners['click']!();
      await page.el('allow').listeners['click']!();
      expect(page.assigned).toBeNull();
    });
  });
});

describe('OAuth consent with a configured frontendUrl', () => {
  const [db] = testDatabases();
  let t: OAuthTestHost;
  beforeAll(async () => {
    t = await startOAuthHost(db!, 'node', { frontendUrl: 'https://app.example/' });
  });
  afterAll(() => t?.close());

  it('redirects to {frontend_url}/oauth/consent and serves no page of its own', async () => {
    const app = await t.createApp();
    const r = await t.request('GET', `/oauth/authorize?${authorizeQuery(app, await pkce())}`);
    expect(r.status).toBe(302);
    expect(r.headers.get('location')).toMatch(/^https:\/\/app\.example\/oauth\/consent\?client_id=/);
    expect((await t.request('GET', '/oauth/consent')).status).toBe(404);
  });
});
