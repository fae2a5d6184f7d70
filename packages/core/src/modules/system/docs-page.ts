import { createHash } from 'node:crypto';

/**
 * A self-contained API reference: one HTML page with inline CSS and script that loads the
 * OpenAPI document next to it (`openapi.json`, resolved against the page's own URL so it works
 * under any mount prefix) and renders every operation. No CDN, no external asset.
 */
export const docsPage = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Trellis API reference</title>
<style>
  :root { --fg:#1d2330; --muted:#5b6475; --line:#e3e6ec; --bg:#fafbfc; --code:#f2f4f7; }
  * { box-sizing: border-box; }
  body { margin:0; font:15px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; color:var(--fg); background:#fff; }
  header { padding:16px 24px; border-bottom:1px solid var(--line); display:flex; gap:16px; align-items:baseline; }
  header h1 { font-size:20px; margin:0; }
  header input { margin-left:auto; padding:6px 10px; border:1px solid var(--line); border-radius:6px; min-width:260px; }
  main { display:grid; grid-template-columns: 260px 1fr; min-height: calc(100vh - 60px); }
  nav { border-right:1px solid var(--line); padding:12px; background:var(--bg); overflow:auto; position:sticky; top:0; height:calc(100vh - 60px); }
  nav a { display:block; color:var(--fg); text-decoration:none; padding:2px 6px; border-radius:4px; font-size:13px; white-space:nowrap; overflow:hidden; text-overflow:ellipsis; }
  nav a:hover { background:var(--line); }
  nav h3 { font-size:12px; text-transform:uppercase; letter-spacing:.05em; color:var(--muted); margin:14px 6px 4px; }
  section.op { border:1px solid var(--line); border-radius:8px; margin:0 0 16px; padding:12px 16px; }
  #content { padding:16px 24px; overflow:auto; }
  .m { display:inline-block; min-width:64px; text-align:center; font:600 12px/22px ui-monospace, monospace; border-radius:4px; color:#fff; margin-right:8px; }
  .GET{background:#2f7d32}.POST{background:#1565c0}.PUT{background:#8d6e00}.PATCH{background:#6a1b9a}.DELETE{background:#c62828}
  code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size:13px; }
  pre { background:var(--code); padding:10px; border-radius:6px; overflow:auto; margin:6px 0; }
  table { border-collapse:collapse; width:100%; margin:6px 0; font-size:13px; }
  td, th { text-align:left; border-bottom:1px solid var(--line); padding:4px 6px; vertical-align:top; }
  .muted { color:var(--muted); } .auth { font-size:12px; color:var(--muted); }
  h2.tag { margin:24px 0 8px; font-size:18px; }
</style>
</head>
<body>
<header><h1 id="title">API reference</h1><span id="version" class="muted"></span><input id="filter" placeholder="Filter by path or summary"></header>
<main><nav id="nav"></nav><div id="content"><p class="muted">Loading the OpenAPI document…</p></div></main>
<script>
(function () {
  var specUrl = new URL(location.pathname.replace(/\\/docs\\/?$/, '') + '/openapi.json', location.href);
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    for (var key in attrs || {}) { if (key === 'text') node.textContent = attrs[key]; else node.setAttribute(key, attrs[key]); }
    (children || []).forEach(function (child) { if (child) node.appendChild(child); });
    return node;
  }
  function resolve(spec, schema) {
    if (schema && schema.$ref) return spec.components.schemas[schema.$ref.split('/').pop()] || {};
    return schema || {};
  }
  function example(spec, schema, depth) {
    schema = resolve(spec, schema);
    if (depth > 4) return '…';
    if (schema.examples) return schema.examples[0];
    if (schema.const !== undefined) return schema.const;
    if (schema.enum) return schema.enum[0];
    if (schema.anyOf) return example(spec, schema.anyOf[0], depth + 1);
    if (schema.type === 'object' || schema.properties) {
      var out = {};
      Object.keys(schema.properties || {}).forEach(function (k) { out[k] = example(spec, schema.properties[k], depth + 1); });
      return out;
    }
    if (schema.type === 'array') return [example(spec, schema.items || {}, depth + 1)];
    if (schema.type === 'integer' || schema.type === 'number') return schema.minimum !== undefined ? schema.minimum : 0;
    if (schema.type === 'boolean') return false;
    if (schema.format === 'uuid') return '0190d3b2-7c1e-7b6a-9f10-2a3b4c5d6e7f';
    if (schema.format === 'date-time') return '2026-01-01T00:00:00.000Z';
    if (schema.format === 'email') return 'ada@example.com';
    return 'string';
  }
  function fieldTable(spec, schema) {
    schema = resolve(spec, schema);
    var props = schema.properties || {};
    var required = schema.required || [];
    var rows = Object.keys(props).map(function (name) {
      var p = resolve(spec, props[name]);
      var type = p.type || (p.enum ? 'enum' : p.anyOf ? 'one of' : p.$ref ? 'object' : '');
      var notes = [p.description, p.enum ? 'one of ' + p.enum.join(', ') : '', p.pattern ? 'pattern ' + p.pattern : '',
        p.minLength !== undefined ? 'min length ' + p.minLength : '', p.maxLength !== undefined ? 'max length ' + p.maxLength : '',
        p.minimum !== undefined ? 'min ' + p.minimum : '', p.maximum !== undefined ? 'max ' + p.maximum : ''].filter(Boolean).join('; ');
      return el('tr', {}, [el('td', {}, [el('code', { text: name })]), el('td', { text: type + (p.format ? ' (' + p.format + ')' : '') }),
        el('td', { text: required.indexOf(name) >= 0 ? 'required' : 'optional' }), el('td', { text: notes })]);
    });
    if (!rows.length) return null;
    return el('table', {}, [el('tr', {}, ['field', 'type', '', 'notes'].map(function (h) { return el('th', { text: h }); }))].concat(rows));
  }
  function render(spec) {
    document.getElementById('title').textContent = spec.info.title;
    document.getElementById('version').textContent = 'version ' + spec.info.version + ' · OpenAPI ' + spec.openapi;
    var byTag = {};
    Object.keys(spec.paths).forEach(function (path) {
      Object.keys(spec.paths[path]).forEach(function (method) {
        var op = spec.paths[path][method];
        var tag = (op.tags && op.tags[0]) || 'Other';
        (byTag[tag] = byTag[tag] || []).push({ path: path, method: method.toUpperCase(), op: op });
      });
    });
    var nav = document.getElementById('nav');
    var content = document.getElementById('content');
    nav.innerHTML = ''; content.innerHTML = '';
    if (spec.info.description) content.appendChild(el('p', { class: 'muted', text: spec.info.description }));
    Object.keys(byTag).sort().forEach(function (tag) {
      nav.appendChild(el('h3', { text: tag }));
      content.appendChild(el('h2', { class: 'tag', text: tag }));
      byTag[tag].forEach(function (entry) {
        var id = entry.op.operationId;
        nav.appendChild(el('a', { href: '#' + id, 'data-search': (entry.path + ' ' + (entry.op.summary || '')).toLowerCase() }, [
          el('span', { class: 'm ' + entry.method, text: entry.method }), document.createTextNode(entry.path)]));
        var section = el('section', { class: 'op', id: id, 'data-search': (entry.path + ' ' + (entry.op.summary || '')).toLowerCase() }, [
          el('div', {}, [el('span', { class: 'm ' + entry.method, text: entry.method }), el('code', { text: entry.path })]),
          entry.op.summary ? el('p', { text: entry.op.summary }) : null,
          entry.op.description ? el('p', { class: 'muted', text: entry.op.description }) : null,
          el('div', { class: 'auth', text: entry.op.security ? 'Authorization: Bearer token' + (entry.op.security.some(function (s) { return Object.keys(s).length === 0; }) ? ' (optional)' : '') : 'No authentication' }),
        ]);
        if (entry.op.parameters && entry.op.parameters.length) {
          section.appendChild(el('h4', { text: 'Parameters' }));
          section.appendChild(el('table', {}, [el('tr', {}, ['name', 'in', '', 'schema'].map(function (h) { return el('th', { text: h }); }))].concat(
            entry.op.parameters.map(function (p) {
              return el('tr', {}, [el('td', {}, [el('code', { text: p.name })]), el('td', { text: p.in }), el('td', { text: p.required ? 'required' : 'optional' }),
                el('td', { text: JSON.stringify(p.schema) + (p.description ? ' — ' + p.description : '') })]);
            }))));
        }
        if (entry.op.requestBody) {
          var types = Object.keys(entry.op.requestBody.content);
          var schema = entry.op.requestBody.content[types[0]].schema;
          section.appendChild(el('h4', { text: 'Request body (' + types.join(' or ') + ')' }));
          section.appendChild(fieldTable(spec, schema));
          section.appendChild(el('pre', { text: JSON.stringify(example(spec, schema, 0), null, 2) }));
        }
        section.appendChild(el('h4', { text: 'Responses' }));
        Object.keys(entry.op.responses).forEach(function (status) {
          var response = entry.op.responses[status];
          var media = response.content && Object.keys(response.content)[0];
          var row = el('div', {}, [el('strong', { text: status + ' ' }), el('span', { text: response.description })]);
          section.appendChild(row);
          if (media && status < 300) section.appendChild(el('pre', { text: JSON.stringify(example(spec, response.content[media].schema, 0), null, 2) }));
        });
        content.appendChild(section);
      });
    });
  }
  document.getElementById('filter').addEventListener('input', function (event) {
    var q = event.target.value.toLowerCase();
    document.querySelectorAll('[data-search]').forEach(function (node) { node.style.display = node.getAttribute('data-search').indexOf(q) >= 0 ? '' : 'none'; });
  });
  fetch(specUrl).then(function (r) { return r.json(); }).then(render).catch(function (error) {
    document.getElementById('content').textContent = 'Could not load ' + specUrl + ': ' + error.message;
  });
})();
</script>
</body>
</html>
`;

const inlineHash = (tag: 'script' | 'style'): string => {
  const match = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(docsPage);
  if (!match) throw new Error(`the docs page has no inline ${tag}`);
  return `'sha256-${createHash('sha256').update(match[1]!, 'utf8').digest('base64')}'`;
};

/**
 * The page runs only its own inline script and style (pinned by hash), fetches only from its own
 * origin, and may not be framed: a Content-Security-Policy with `frame-ancestors 'none'`, plus
 * `nosniff`, `X-Frame-Options` for older browsers, and no referrer.
 */
export const docsPageSecurityHeaders: Readonly<Record<string, string>> = Object.freeze({
  'content-security-policy': [
    "default-src 'none'",
    `script-src ${inlineHash('script')}`,
    `style-src ${inlineHash('style')}`,
    "connect-src 'self'",
    "img-src 'self' data:",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
});
