import { randomBytes } from 'node:crypto';
import type { TrellisConfig } from '../../../kernel/config/config.js';
import { Reply } from '../../../kernel/http/reply.js';
import { defineRoute, type RouteDefinition } from '../../../kernel/http/route.js';
import { Type } from '../../../kernel/http/response-schema.js';
import { configServiceIdentifier, kernelServiceIdentifier } from '../../../kernel/tokens.js';
import { issuerOf } from '../services/issuer.js';

/**
 * The script of the built-in login and consent page, plain ES2017 with no dependencies. It reads
 * the parameters GET /oauth/authorize put in the query, shows the app (GET
 * /oauth/apps/:clientId/public), signs the user in (POST /auth/login; the JWT lives in
 * sessionStorage for this tab only) and, on Allow, calls POST /oauth/authorize and navigates to
 * the returned redirect. It only ever sends the browser to a redirect URI the app has registered.
 * prompt=login and select_account discard a stored session; prompt=none (popup mode only reaches
 * this page) posts `interaction_required` to the opener, restricted to the redirect URI's origin.
 */
export const consentScript = String.raw`(function () {
  'use strict';
  var config = JSON.parse(document.getElementById('config').textContent);
  var query = new URLSearchParams(location.search);
  var names = ['client_id', 'redirect_uri', 'scope', 'state', 'code_challenge', 'code_challenge_method', 'prompt', 'login_hint', 'display'];
  var p = {};
  names.forEach(function (name) { var value = query.get(name); if (value) p[name] = value; });
  var prompts = (p.prompt || '').split(' ');
  var KEY = 'trellis.oauth.session';
  var el = function (id) { return document.getElementById(id); };
  var show = function (id, on) { el(id).hidden = !on; };
  var trusted = false;

  function fail(message) { el('error').textContent = message; show('error', true); }

  async function api(path, init) {
    var response = await fetch(config.base + path, init);
    var body = {};
    try { body = await response.json(); } catch (ignored) { body = {}; }
    return { status: response.status, body: body };
  }

  function session() { return sessionStorage.getItem(KEY); }

  function answer(params) {
    if (!trusted) return;
    var reply = Object.assign({}, params, p.state ? { state: p.state } : {}, { iss: config.issuer });
    if (p.display === 'popup' && window.opener) {
      window.opener.postMessage(reply, new URL(p.redirect_uri).origin);
      window.close();
      return;
    }
    var sep = p.redirect_uri.indexOf('?') >= 0 ? '&' : '?';
    location.assign(p.redirect_uri + sep + new URLSearchParams(reply).toString());
  }

  function showLogin() {
    show('consent', false);
    show('login', true);
    if (p.login_hint && !el('email').value) el('email').value = p.login_hint;
  }

  function showConsent(user) {
    show('login', false);
    show('error', false);
    el('signed-in').textContent = 'Signed in as ' + user.email;
    show('consent', true);
  }

  async function resume() {
    var token = session();
    if (!token) return showLogin();
    var me = await api('/auth/me', { headers: { authorization: 'Bearer ' + token } });
    if (me.status !== 200) { sessionStorage.removeItem(KEY); return showLogin(); }
    showConsent(me.body.user);
  }

  el('login').addEventListener('submit', async function (event) {
    event.preventDefault();
    var result = await api('/auth/login', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: el('email').value, password: el('password').value }),
    });
    el('password').value = '';
    if (result.status !== 200) return fail(result.body.message || 'Sign-in failed.');
    sessionStorage.setItem(KEY, result.body.token);
    showConsent(result.body.user);
  });

  el('allow').addEventListener('click', async function () {
    var body = {};
    ['client_id', 'redirect_uri', 'scope', 'state', 'code_challenge', 'code_challenge_method'].forEach(function (name) { if (p[name]) body[name] = p[name]; });
    var result = await api('/oauth/authorize', {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer ' + session() },
      body: JSON.stringify(body),
    });
    if (result.status === 200) return location.assign(result.body.redirectTo);
    if (result.status === 401) { sessionStorage.removeItem(KEY); fail('Your session ended; sign in again.'); return showLogin(); }
    fail(result.body.error_description || 'The authorization failed.');
  });

  el('deny').addEventListener('click', function () {
    answer({ error: 'access_denied', error_description: 'The user denied the request.' });
  });

  el('switch').addEventListener('click', function () {
    sessionStorage.removeItem(KEY);
    showLogin();
  });

  async function main() {
    if (!p.client_id || !p.redirect_uri) return fail('This page is reached through /oauth/authorize.');
    var info = await api('/oauth/apps/' + encodeURIComponent(p.client_id) + '/public');
    if (info.status !== 200) return fail('Unknown application.');
    var app = info.body;
    if (app.redirect_uris.indexOf(p.redirect_uri) < 0) return fail('The redirect URI is not registered for this application.');
    trusted = true;
    el('app-name').textContent = app.name;
    el('title').textContent = 'Sign in to continue to ' + app.name;
    el('app-description').textContent = app.description;
    if (app.logo_url && app.logo_url.indexOf('https:') === 0) { el('logo').src = app.logo_url; show('logo', true); }
    var wanted = (p.scope || app.scopes.join(' ')).split(' ');
    var list = el('scopes');
    list.replaceChildren();
    app.scope_descriptions.forEach(function (entry) {
      if (wanted.indexOf(entry.scope) < 0) return;
      var item = document.createElement('li');
      item.textContent = entry.description;
      list.append(item);
    });
    if (prompts.indexOf('none') >= 0) {
      return answer({ error: 'interaction_required', error_description: 'The user must sign in and confirm.' });
    }
    if (prompts.indexOf('login') >= 0 || prompts.indexOf('select_account') >= 0) sessionStorage.removeItem(KEY);
    await resume();
  }

  main().catch(function () { fail('Something went wrong; reload the page.'); });
})();`;

const style = `
  body { font: 16px/1.5 system-ui, sans-serif; background: #f5f5f4; color: #1c1917; margin: 0; }
  main { max-width: 26rem; margin: 8vh auto; background: #fff; padding: 2rem; border-radius: 12px; box-shadow: 0 1px 4px #0002; }
  h1 { font-size: 1.25rem; margin: 0 0 .5rem; }
  #logo { width: 48px; height: 48px; border-radius: 8px; }
  label { display: block; margin: .75rem 0; }
  input { display: block; width: 100%; box-sizing: border-box; padding: .5rem; margin-top: .25rem; font: inherit; }
  button { font: inherit; padding: .5rem 1rem; border-radius: 6px; border: 1px solid #a8a29e; background: #fff; cursor: pointer; }
  #allow, form button { background: #1c1917; color: #fff; border-color: #1c1917; }
  .actions { display: flex; gap: .5rem; justify-content: flex-end; margin-top: 1rem; }
  #switch { border: 0; padding: 0; margin-top: 1rem; color: #57534e; text-decoration: underline; }
  #error { color: #b91c1c; }
  [hidden] { display: none !important; }
`;

function page(nonce: string, settings: { issuer: string; base: string }): string {
  // JSON inside <script>: escape "<" so no value can close the element.
  const json = JSON.stringify(settings).replace(/</g, '\\u003c');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Authorize</title>
<style nonce="${nonce}">${style}</style>
</head>
<body>
<main>
  <img id="logo" alt="" hidden>
  <h1 id="title">Authorize</h1>
  <p id="app-description"></p>
  <p id="error" role="alert" hidden></p>
  <form id="login" hidden>
    <label>Email <input id="email" type="email" autocomplete="username" required></label>
    <label>Password <input id="password" type="password" autocomplete="current-password" required></label>
    <div class="actions"><button type="submit">Sign in</button></div>
  </form>
  <section id="consent" hidden>
    <p><strong id="app-name"></strong> would like to:</p>
    <ul id="scopes"></ul>
    <p id="signed-in"></p>
    <div class="actions"><button id="deny" type="button">Deny</button><button id="allow" type="button">Allow</button></div>
    <button id="switch" type="button">Use another account</button>
  </section>
</main>
<script type="application/json" id="config">${json}</script>
<script nonce="${nonce}">${consentScript}</script>
</body>
</html>
`;
}

/**
 * GET /oauth/consent, registered only when no `frontendUrl` is configured, so the whole flow works
 * in a browser out of the box. The page may not be framed (RFC 9700 §4.16), sends no Referer
 * (§4.2), runs only its own script (CSP with a per-response nonce) and is never cached.
 */
export const consentPageRoute: RouteDefinition = defineRoute({
  method: 'GET',
  path: '/oauth/consent',
  summary: 'Built-in login and consent page (when no frontendUrl is configured)',
  tags: ['OAuth'],
  auth: 'none',
  response: { description: 'HTML page', contentType: 'text/html', schema: Type.String() },
  handler(ctx) {
    const config: TrellisConfig = ctx.get(configServiceIdentifier);
    const nonce = randomBytes(16).toString('base64');
    const html = page(nonce, { issuer: issuerOf(config, ctx.get(kernelServiceIdentifier).servedUrl), base: config.server.basePath });
    return Reply.raw(html, 'text/html; charset=utf-8', 200, {
      'content-security-policy': `default-src 'none'; script-src 'nonce-${nonce}'; style-src 'nonce-${nonce}'; img-src https: data:; connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'`,
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      'x-content-type-options': 'nosniff',
      'cache-control': 'no-store',
    });
  },
});
