import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, getToken, onUnauthorized, setToken, type User } from './api';
import { EvaluationPage, EvaluationsPage, ComparePage } from './pages/evaluations';
import { PlaygroundPage } from './pages/playground';
import { ProjectPage, ProjectsPage } from './pages/projects';
import { RunPage } from './pages/run';
import { RunsPage } from './pages/runs';
import { link, navigate, useRoute } from './router';

export function App() {
  const route = useRoute();
  const [token, setTokenState] = useState(getToken());
  const [user, setUser] = useState<User | null>(null);

  useEffect(() => onUnauthorized(() => signOut()), []);
  useEffect(() => {
    if (!token) return;
    api<{ user: User }>('GET', '/auth/me').then(
      (me) => setUser(me.user),
      () => undefined,
    );
  }, [token]);

  const signOut = () => {
    setToken(null);
    setTokenState(null);
    setUser(null);
  };

  if (!token) {
    return (
      <Shell user={null} onSignOut={signOut}>
        <SignIn
          onSignedIn={(t, u) => {
            setToken(t);
            setTokenState(t);
            setUser(u);
          }}
        />
      </Shell>
    );
  }

  const [section, a, b] = route.path;
  let page: ComponentChildren;
  if (section === 'projects' && a && b === 'runs') page = <RunsPage projectId={a} query={route.query} />;
  else if (section === 'projects' && a) page = <ProjectPage projectId={a} />;
  else if (section === 'runs' && a && b) page = <RunPage documentId={a} runId={b} />;
  else if (section === 'playground' && a) page = <PlaygroundPage projectId={a} documentId={route.query.get('document') ?? undefined} />;
  else if (section === 'evaluations' && a === 'compare') page = <ComparePage base={route.query.get('base') ?? ''} candidate={route.query.get('candidate') ?? ''} />;
  else if (section === 'evaluations' && a) page = <EvaluationPage evaluationId={a} />;
  else if (section === 'evaluations') page = <EvaluationsPage blockId={route.query.get('blockId') ?? ''} />;
  else page = <ProjectsPage />;

  return (
    <Shell user={user} onSignOut={signOut}>
      {page}
    </Shell>
  );
}

function Shell({ user, onSignOut, children }: { user: User | null; onSignOut(): void; children: ComponentChildren }) {
  return (
    <>
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={link()}>
          Trellis console
        </a>
        {user !== null || getToken() ? (
          <nav aria-label="Main">
            <a href={link()}>Projects</a>
            <a href={link('evaluations')}>Evaluations</a>
            {user && <span class="muted who">{user.email}</span>}
            <button type="button" class="link-button" onClick={onSignOut}>
              Sign out
            </button>
          </nav>
        ) : null}
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}

function SignIn({ onSignedIn }: { onSignedIn(token: string, user: User): void }) {
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const answer = await api<{ token: string; user: User }>('POST', '/auth/login', { email, password });
      onSignedIn(answer.token, answer.user);
      if (!location.hash || location.hash === '#/') navigate(link());
    } catch (e) {
      setError(e instanceof ApiError ? `${e.message} (${e.code})` : String(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="narrow" aria-labelledby="signin-title">
      <h1 id="signin-title">Sign in</h1>
      <form onSubmit={submit}>
        <label for="email">Email</label>
        <input id="email" name="email" type="email" autoComplete="username" required value={email} onInput={(e) => setEmail(e.currentTarget.value)} />
        <label for="password">Password</label>
        <input id="password" name="password" type="password" autoComplete="current-password" required value={password} onInput={(e) => setPassword(e.currentTarget.value)} />
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <p class="muted">The session token is kept in this tab only (sessionStorage) and is gone when the tab closes.</p>
    </section>
  );
}

/** A loading line, an error line or nothing. */
export function Status({ loading, error }: { loading?: boolean; error?: Error }) {
  if (error)
    return (
      <p class="error" role="alert">
        {error instanceof ApiError ? `${error.status} ${error.code}: ${error.message}` : error.message}
      </p>
    );
  if (loading) return <p class="muted" aria-live="polite">Loading…</p>;
  return null;
}
