import type { EntityManager } from '@mikro-orm/core';
import { toTrellisError } from '../../../kernel/errors.js';
import type { AiGateway } from '../../../ports/ai-provider.js';
import type { CreditService } from '../../billing/index.js';
import { labelOf, valueAt, type EvaluatorScore, type EvaluatorSpec } from './evaluators.js';

type JudgeSpec = Extract<EvaluatorSpec, { type: 'judge' }>;

const MAX_TEXT = 20_000;
const textOf = (value: unknown): string => {
  const text = typeof value === 'string' ? value : JSON.stringify(value ?? null);
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}…` : text;
};

/** The instructions a judge model gets: the rubric, and the answer format it must keep to. */
export const JUDGE_SYSTEM_PROMPT = [
  'You are a strict grader of the output of an AI workflow.',
  'Grade the OUTPUT against the RUBRIC (the INPUTS and the EXPECTED answer, when given, are context).',
  'Answer with one JSON object and nothing else: {"score": <number from 0 to 1>, "reason": "<one sentence>"}.',
].join('\n');

/** The user message a judge gets for one case. */
export function judgePrompt(spec: JudgeSpec, c: { inputs: unknown; expected: unknown; output: unknown }): string {
  const parts = [`RUBRIC:\n${spec.rubric}`, `INPUTS:\n${textOf(c.inputs)}`];
  if (c.expected !== null && c.expected !== undefined) parts.push(`EXPECTED:\n${textOf(valueAt(c.expected, spec.path) ?? c.expected)}`);
  parts.push(`OUTPUT:\n${textOf(valueAt(c.output, spec.path))}`);
  return parts.join('\n\n');
}

/** Reads `{score, reason}` out of a judge's answer (the first JSON object in it); null when there is none. */
export function readVerdict(text: string): { score: number; reason: string } | null {
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start < 0 || end <= start) return null;
  try {
    const parsed = JSON.parse(text.slice(start, end + 1)) as { score?: unknown; reason?: unknown };
    const score = typeof parsed.score === 'number' ? parsed.score : typeof parsed.score === 'string' ? Number(parsed.score) : Number.NaN;
    if (!Number.isFinite(score)) return null;
    return { score: Math.min(1, Math.max(0, score)), reason: typeof parsed.reason === 'string' ? parsed.reason.slice(0, 1000) : '' };
  } catch {
    return null;
  }
}

/**
 * A model-graded score: one call of the judge model (resolved for `userId`, like an LLM block's),
 * its credits held before and charged after to the team, as a run's model calls are. A failed
 * call or an answer without a score is a failed verdict whose detail says why.
 */
export async function judge(
  deps: { gateway: AiGateway; credits: CreditService; em: EntityManager },
  spec: JudgeSpec,
  c: { userId: string; teamId: string; evaluationId: string; inputs: unknown; expected: unknown; output: unknown; signal?: AbortSignal },
): Promise<EvaluatorScore> {
  const label = labelOf(spec);
  const threshold = spec.threshold ?? 0.5;
  let held: string | null = null;
  let credits = 0;
  try {
    const estimate = await deps.gateway.estimate(spec.modelId);
    const amount = Math.max(1, Math.ceil(estimate));
    held = (await deps.credits.reserve(deps.em, { teamId: c.teamId, amount, reason: `evaluation ${c.evaluationId} judge`, userId: c.userId })).id;
    let text = '';
    let usage = { inputTokens: 0, outputTokens: 0 };
    const request = {
      messages: [
        { role: 'system' as const, content: JUDGE_SYSTEM_PROMPT },
        { role: 'user' as const, content: judgePrompt(spec, c) },
      ],
      temperature: 0,
      ...(c.signal ? { signal: c.signal } : {}),
    };
    for await (const part of deps.gateway.chat({ userId: c.userId, modelId: spec.modelId, request })) {
      if (part.type === 'text-delta') text += part.delta;
      else if (part.type === 'finish') usage = part.usage;
    }
    // The hold is the most a call may cost (as for a run's model calls): the price past it is not charged.
    const price = Math.min(amount, Math.ceil(await deps.gateway.price(spec.modelId, usage)));
    const reservation = await deps.credits.settle(deps.em, held, price, `evaluation ${c.evaluationId} judge`);
    held = null;
    credits = reservation.usedCredits ?? 0;
    const verdict = readVerdict(text);
    if (!verdict) return { evaluator: label, score: 0, passed: false, detail: `the judge gave no score: ${JSON.stringify(text.slice(0, 200))}`, credits };
    return { evaluator: label, score: verdict.score, passed: verdict.score >= threshold, detail: verdict.reason || null, credits };
  } catch (error) {
    if (held) await deps.credits.release(deps.em, held, 'judge call failed').catch(() => undefined);
    const failure = toTrellisError(error);
    return { evaluator: label, score: 0, passed: false, detail: `judge failed: ${failure.code}: ${failure.message}`, credits };
  }
}
