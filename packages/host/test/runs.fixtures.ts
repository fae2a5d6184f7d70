import type { TestHost } from '@trellis/test-support';

export { sharedDatabase } from '@trellis/test-support';
import { createDocument, createProject } from './documents.fixtures.js';

/** Workflow blocks as documents store them (docs/runs.md). */
export const wf = {
  input: (name: string, attrs: Record<string, unknown> = {}) => ({ type: 'inputBlock', attrs: { id: `in-${name}`, name, type: 'string', ...attrs } }),
  llm: (name: string, model: string, prompt: string, attrs: Record<string, unknown> = {}) => ({ type: 'llmBlock', attrs: { id: `llm-${name}`, name, model, ...attrs }, content: [{ type: 'text', text: prompt }] }),
  code: (name: string, code: string, attrs: Record<string, unknown> = {}) => ({ type: 'codeBlock', attrs: { id: `code-${name}`, name, language: 'javascript', ...attrs }, content: [{ type: 'text', text: code }] }),
  tool: (name: string, tool: string, action: string, args: Record<string, unknown>, attrs: Record<string, unknown> = {}) => ({ type: 'toolBlock', attrs: { id: `tool-${name}`, name, tool, action, args, ...attrs } }),
  ask: (name: string, question: string) => ({ type: 'askBlock', attrs: { id: `ask-${name}`, name, question } }),
  output: (name: string, template: string) => ({ type: 'outputBlock', attrs: { id: `out-${name}`, name }, content: [{ type: 'text', text: template }] }),
  paragraph: (id: string, text: string) => ({ type: 'paragraph', attrs: { id }, content: [{ type: 'text', text }] }),
  doc: (...blocks: unknown[]) => ({ type: 'doc', content: blocks }),
};

/** A project and a document holding `content`, created over HTTP. */
export async function workflowDocument(t: TestHost, token: string, content: unknown, project?: { id: string }): Promise<{ projectId: string; documentId: string }> {
  const p = project ?? (await createProject(t, token));
  const d = await createDocument(t, token, p.id, { content });
  return { projectId: p.id, documentId: d.id };
}


/** Sequence numbers are 1, 2, 3, ... without holes or repeats. */
export function expectDense(seqs: number[]): void {
  const expected = Array.from({ length: seqs.length }, (_, i) => i + 1);
  if (JSON.stringify(seqs) !== JSON.stringify(expected)) throw new Error(`sequence numbers are not 1..${seqs.length}: ${seqs.join(',')}`);
}
