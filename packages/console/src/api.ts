/**
 * The console's view of the Trellis HTTP API: the server's base URL (the page is served at
 * `<base>/console`, so the API is at `<base>`), the signed-in token (sessionStorage: it ends with
 * the tab), and a JSON fetch that turns error answers into `ApiError` with the server's code.
 */

const TOKEN_KEY = 'trellis.console.token';

/** `https://host/prefix/console` → `https://host/prefix`. */
export const apiBase = `${location.origin}${location.pathname.replace(/\/console(\/.*)?$/, '')}`;

export function getToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(token: string | null): void {
  if (token === null) sessionStorage.removeItem(TOKEN_KEY);
  else sessionStorage.setItem(TOKEN_KEY, token);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export function authHeaders(extra: Record<string, string> = {}): Record<string, string> {
  const token = getToken();
  return token ? { ...extra, authorization: `Bearer ${token}` } : extra;
}

/** Listeners told when the server answers 401 (the token expired or was revoked). */
const unauthorized = new Set<() => void>();
export function onUnauthorized(listener: () => void): () => void {
  unauthorized.add(listener);
  return () => unauthorized.delete(listener);
}

export async function errorOf(response: Response): Promise<ApiError> {
  let code = `http_${response.status}`;
  let message = response.statusText || `HTTP ${response.status}`;
  try {
    const body = (await response.json()) as { error?: unknown; code?: unknown; message?: unknown };
    if (typeof body.error === 'string') code = body.error;
    else if (typeof body.code === 'string') code = body.code;
    if (typeof body.message === 'string') message = body.message;
  } catch {
    // not JSON: keep the status line
  }
  if (response.status === 401) for (const listener of unauthorized) listener();
  return new ApiError(response.status, code, message);
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const response = await fetch(`${apiBase}${path}`, {
    method,
    headers: authHeaders(body === undefined ? {} : { 'content-type': 'application/json' }),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw await errorOf(response);
  if (response.status === 204 || response.status === 202) {
    const text = await response.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }
  return (await response.json()) as T;
}

export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  size: number;
}

export interface User {
  id: string;
  email: string;
  name?: string | null;
}

export interface Project {
  id: string;
  name: string;
  description?: string | null;
  access?: string;
  filesFolder?: TreeNode[];
  createdAt?: string;
}

export interface TreeNode {
  key: string;
  label: string;
  type: 'file' | 'folder';
  docType?: string;
  children?: TreeNode[];
}

export interface Deployment {
  id: string;
  blockId: string;
  projectId: string;
  name: string;
  access: string;
  latestVersion: number | string | null;
  deployedAt?: string | null;
}

export type RunStatus = 'queued' | 'running' | 'waiting' | 'completed' | 'failed' | 'timed_out' | 'cancelled';
export const runStatuses: readonly RunStatus[] = ['queued', 'running', 'waiting', 'completed', 'failed', 'timed_out', 'cancelled'];

export interface RunRecord {
  id: string;
  documentId: string;
  projectId?: string;
  source: string;
  version?: number | string | null;
  status: RunStatus;
  inputs?: Record<string, unknown> | null;
  output?: unknown;
  error?: unknown;
  waiting?: { blockId?: string; question?: string } | null;
  usage?: unknown;
  usedCredits?: number | string | null;
  duration?: number | null;
  createdAt: string;
}

/** `GET /documents/{id}/runs/{runId}/model-calls` (answered by hosts that record model calls). */
/** One model call record (`GET .../runs/{runId}/model-calls`, docs/observability.md). */
export interface ModelCall {
  id: string;
  model: string;
  provider: string;
  usage: { inputTokens: number; outputTokens: number; cachedTokens: number | null };
  credits: number;
  status: string;
  firstTokenMs: number | null;
  durationMs: number | null;
}

export interface EvaluationSummary {
  cases: number;
  passed: number;
  failed: number;
  errored: number;
  meanScore: number | null;
  credits: number | string | null;
  latencyMs: { p50: number | null; p95: number | null };
}

export interface Evaluation {
  id: string;
  datasetId: string;
  blockId: string;
  version: number | string;
  status: string;
  summary?: EvaluationSummary | null;
  createdAt?: string;
}

export interface EvaluationResult {
  caseId: string;
  caseName?: string | null;
  passed?: boolean | null;
  score?: number | null;
  scores?: { evaluator?: string; score?: number | null; passed?: boolean | null; detail?: unknown }[];
  output?: unknown;
  error?: unknown;
  status?: string;
}

export interface CaseSide {
  passed: boolean | null;
  score: number | null;
  output: unknown;
}

export interface Comparison {
  base: Evaluation;
  candidate: Evaluation;
  summary: { improved: number; regressed: number; unchanged: number; changed: number };
  cases: { caseId: string; caseName?: string | null; base: CaseSide | null; candidate: CaseSide | null; change: string }[];
}

/** Every document of a project's file tree, depth first, with its folder path. */
export function documentsOf(tree: readonly TreeNode[] | undefined, path = ''): { id: string; title: string; path: string; docType?: string }[] {
  const out: { id: string; title: string; path: string; docType?: string }[] = [];
  for (const node of tree ?? []) {
    if (node.type === 'folder') out.push(...documentsOf(node.children, path ? `${path} / ${node.label}` : node.label));
    else out.push({ id: node.key, title: node.label, path, docType: node.docType });
  }
  return out;
}

export const show = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value, null, 2) ?? String(value));

export const when = (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleString() : '—');
