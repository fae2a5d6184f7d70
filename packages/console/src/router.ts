import { useEffect, useState } from 'preact/hooks';

/**
 * Client-side routes live in the URL's fragment (`/console#/runs/...`): the host serves one page
 * at `/console`, and a reload or a shared link opens the same view.
 */
export interface Route {
  path: string[];
  query: URLSearchParams;
}

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#/, '') || '/';
  const [pathPart = '/', queryPart = ''] = raw.split('?', 2);
  return { path: pathPart.split('/').filter(Boolean).map(decodeURIComponent), query: new URLSearchParams(queryPart) };
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const update = () => setRoute(parseHash(location.hash));
    window.addEventListener('hashchange', update);
    return () => window.removeEventListener('hashchange', update);
  }, []);
  return route;
}

/** `href` for a console view: `link('runs', docId, runId)` → `#/runs/<docId>/<runId>`. */
export function link(...parts: (string | Record<string, string | undefined>)[]): string {
  const segments: string[] = [];
  let query = '';
  for (const part of parts) {
    if (typeof part === 'string') segments.push(encodeURIComponent(part));
    else {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(part)) if (v) params.set(k, v);
      query = params.toString();
    }
  }
  return `#/${segments.join('/')}${query ? `?${query}` : ''}`;
}

export function navigate(href: string): void {
  location.hash = href.replace(/^#/, '');
}
