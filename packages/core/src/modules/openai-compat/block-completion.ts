import type { EntityManager } from '@mikro-orm/core';
import { TrellisError } from '../../kernel/errors.js';
import { type BlockRunTarget, DeploymentService, type DeploymentCaller } from '../blocks/index.js';
import { definitionsOf, runAs, Run, RunService, type StartedRun } from '../runs/index.js';
import type { CompletionPart, PreparedCompletion } from './completion.js';

type Get = <T>(id: new (...args: any[]) => T) => T;

/** The names of a workflow's input blocks, in document order. */
function inputBlockNames(content: unknown): string[] {
  const names: string[] = [];
  const visit = (node: unknown) => {
    if (!node || typeof node !== 'object') return;
    const n = node as { type?: unknown; attrs?: { name?: unknown }; content?: unknown };
    if (n.type === 'inputBlock' && typeof n.attrs?.name === 'string') names.push(n.attrs.name);
    if (Array.isArray(n.content)) n.content.forEach(visit);
  };
  visit(content);
  return names;
}

/**
 * The run's inputs from the last user message: a JSON object is the inputs themselves; any other
 * text is the value of the deployment's first input (its input definitions, else its first input
 * block). A deployment without inputs gets none.
 */
export function inputsFromText(target: BlockRunTarget, text: string): Record<string, unknown> {
  const trimmed = text.trim();
  if (trimmed.startsWith('{')) {
    try {
      const parsed: unknown = JSON.parse(trimmed);
      if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
    } catch {
      /* not JSON: the text is the first input */
    }
  }
  const first = target.inputs?.length ? (target.inputs.find((i) => i.required) ?? target.inputs[0])!.name : inputBlockNames(target.content)[0];
  return first === undefined ? {} : { [first]: text };
}

/** `block:<bid>` or `block:<bid>@<version>`. */
export function parseBlockModel(model: string): { bid: string; version?: string } {
  const rest = model.slice('block:'.length);
  const at = rest.indexOf('@');
  return at < 0 ? { bid: rest } : { bid: rest.slice(0, at), version: rest.slice(at + 1) };
}

/**
 * Starts a run of a deployed block as `POST /block/{bid}/api` does (same access rules, inputs
 * checked against the deployment, credits held from the project's team), recorded with `source`
 * (`mcp`, `openai`), with the inputs `inputsOf` makes for the deployment.
 */
export async function startDeploymentRun(
  em: EntityManager,
  get: Get,
  caller: DeploymentCaller,
  source: 'mcp' | 'openai',
  bid: string,
  inputsOf: (target: BlockRunTarget) => Record<string, unknown>,
  version?: string,
): Promise<StartedRun> {
  const target = await get(DeploymentService).resolveApiRun(em, caller, bid, version);
  return get(RunService).start(em, {
    userId: await runAs(em, target),
    documentId: target.documentId,
    projectId: target.projectId,
    teamId: target.teamId,
    content: target.content,
    inputs: inputsOf(target),
    inputDefinitions: definitionsOf(target),
    source,
    version: target.version,
    store: true,
  });
}

/**
 * A run of a deployed block, as `POST /block/{bid}/api` starts it (same access rules, inputs
 * checked against the deployment, credits held from the project's team, recorded with source
 * `openai`). The answer's text is what the run's blocks stream (`block_chunk`), or the run's output
 * as text when nothing was streamed. A run that fails answers the run's error. The usage is the
 * tokens of the run's model calls (every LLM block, all models summed).
 */
export async function prepareBlockCompletion(em: EntityManager, get: Get, caller: DeploymentCaller, model: string, text: string, signal: AbortSignal): Promise<PreparedCompletion> {
  const { bid, version } = parseBlockModel(model);
  const started = await startDeploymentRun(em, get, caller, 'openai', bid, (target) => inputsFromText(target, text), version);

  async function* parts(): AsyncGenerator<CompletionPart> {
    let streamed = false;
    for await (const event of started.events(0, signal)) {
      if (event.type === 'block_chunk' && typeof event.data.delta === 'string') {
        streamed = true;
        yield { type: 'text', delta: event.data.delta };
      } else if (event.type === 'run_error') {
        throw new TrellisError('bad_request', 'run_failed', `The run ${started.runId} failed: ${String(event.data.message ?? event.data.error ?? 'unknown error')}`, { extra: { run_id: started.runId } });
      } else if (event.type === 'run_complete' || event.type === 'run_waiting') {
        break;
      }
    }
    const result = await started.result();
    if (result.status === 'failed' || result.error) throw new TrellisError('bad_request', 'run_failed', `The run ${started.runId} failed: ${result.error?.message ?? 'unknown error'}`, { extra: { run_id: started.runId } });
    if (result.status === 'waiting' && result.waiting) {
      yield { type: 'text', delta: streamed ? `\n${result.waiting.question}` : result.waiting.question };
    } else if (!streamed && result.output !== null && result.output !== undefined) {
      yield { type: 'text', delta: typeof result.output === 'string' ? result.output : JSON.stringify(result.output) };
    }
    // The tokens of the run's model calls, all models together (the run records them per model).
    const run = await em.fork().findOne(Run, { id: started.runId });
    const usage = { inputTokens: 0, outputTokens: 0 };
    for (const model of Object.values(run?.usage?.models ?? {})) {
      usage.inputTokens += model.inputTokens ?? 0;
      usage.outputTokens += model.outputTokens ?? 0;
    }
    yield { type: 'finish', reason: 'stop', usage };
  }
  return { parts: parts() };
}
