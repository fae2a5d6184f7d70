import { useState } from 'preact/hooks';
import { api, ApiError, show, when, type CaseSide, type Comparison, type Evaluation, type EvaluationResult, type EvaluationSummary, type Page } from '../api';
import { Status } from '../app';
import { useLoad } from '../hooks';
import { link, navigate } from '../router';

const items = <T,>(answer: T[] | Page<T> | undefined): T[] => (Array.isArray(answer) ? answer : (answer?.items ?? []));
/** A result's score: its own, else the mean of its evaluators' scores. */
const meanScore = (r: EvaluationResult): number | null => {
  const scores = (r.scores ?? []).map((s) => s.score).filter((s): s is number => typeof s === 'number');
  return scores.length ? scores.reduce((a, b) => a + b, 0) / scores.length : null;
};
const num = (v: unknown) => (v === null || v === undefined ? '—' : typeof v === 'number' ? String(Math.round(v * 1000) / 1000) : String(v));

function SummaryFacts({ summary }: { summary: EvaluationSummary | null | undefined }) {
  if (!summary) return <p class="muted">No summary yet.</p>;
  return (
    <dl class="facts inline">
      <dt>Cases</dt>
      <dd>{summary.cases}</dd>
      <dt>Passed</dt>
      <dd>{summary.passed}</dd>
      <dt>Failed</dt>
      <dd>{summary.failed}</dd>
      <dt>Errored</dt>
      <dd>{summary.errored}</dd>
      <dt>Mean score</dt>
      <dd>{num(summary.meanScore)}</dd>
      <dt>Credits</dt>
      <dd>{num(summary.credits)}</dd>
      <dt>Latency p50 / p95</dt>
      <dd>
        {num(summary.latencyMs?.p50)} / {num(summary.latencyMs?.p95)} ms
      </dd>
    </dl>
  );
}

export function EvaluationsPage({ blockId }: { blockId: string }) {
  const [block, setBlock] = useState(blockId);
  const [base, setBase] = useState('');
  const [candidate, setCandidate] = useState('');
  const list = useLoad(
    () => (blockId ? api<Evaluation[] | Page<Evaluation>>('GET', `/evaluations?blockId=${encodeURIComponent(blockId)}`) : Promise.resolve(undefined)),
    [blockId],
  );
  const evaluations = items(list.data);
  return (
    <section aria-labelledby="evals-title">
      <h1 id="evals-title">Evaluations</h1>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          navigate(link('evaluations', { blockId: block.trim() }));
        }}
      >
        <div>
          <label for="eval-block">Deployed block id</label>
          <input id="eval-block" value={block} onInput={(e) => setBlock(e.currentTarget.value)} placeholder="block id" />
        </div>
        <button type="submit">Show evaluations</button>
      </form>
      {!blockId && <p class="muted">Pick a deployment on a project's page, or enter its block id.</p>}
      {list.error instanceof ApiError && list.error.status === 404 && list.error.code === 'route_not_found' ? (
        <p class="muted">This server has no evaluations.</p>
      ) : (
        <Status loading={list.loading && !!blockId} error={list.error} />
      )}
      {blockId && list.data && evaluations.length === 0 && <p class="muted">No evaluations of this block.</p>}
      {evaluations.length > 0 && (
        <>
          <div class="scroll">
            <table>
              <thead>
                <tr>
                  <th scope="col">Evaluation</th>
                  <th scope="col">Version</th>
                  <th scope="col">Status</th>
                  <th scope="col">Passed</th>
                  <th scope="col">Mean score</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {evaluations.map((e) => (
                  <tr key={e.id}>
                    <td>
                      <a href={link('evaluations', e.id)}>{e.id.slice(0, 8)}</a>
                    </td>
                    <td>{e.version}</td>
                    <td>{e.status}</td>
                    <td>{e.summary ? `${e.summary.passed} / ${e.summary.cases}` : '—'}</td>
                    <td>{num(e.summary?.meanScore)}</td>
                    <td>{when(e.createdAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <form
            class="filters"
            aria-label="Compare two evaluations"
            onSubmit={(e) => {
              e.preventDefault();
              if (base && candidate) navigate(link('evaluations', 'compare', { base, candidate }));
            }}
          >
            <div>
              <label for="cmp-base">Base</label>
              <select id="cmp-base" value={base} onChange={(e) => setBase(e.currentTarget.value)}>
                <option value="">Choose…</option>
                {evaluations.map((e) => (
                  <option key={e.id} value={e.id}>
                    version {e.version} · {e.id.slice(0, 8)}
                  </option>
                ))}
              </select>
            </div>
            <div>
              <label for="cmp-candidate">Candidate</label>
              <select id="cmp-candidate" value={candidate} onChange={(e) => setCandidate(e.currentTarget.value)}>
                <option value="">Choose…</option>
                {evaluations.map((e) => (
                  <option key={e.id} value={e.id}>
                    version {e.version} · {e.id.slice(0, 8)}
                  </option>
                ))}
              </select>
            </div>
            <button type="submit" disabled={!base || !candidate}>
              Compare
            </button>
          </form>
        </>
      )}
    </section>
  );
}

export function EvaluationPage({ evaluationId }: { evaluationId: string }) {
  const evaluation = useLoad(() => api<Evaluation>('GET', `/evaluations/${evaluationId}`), [evaluationId]);
  const results = useLoad(() => api<EvaluationResult[] | Page<EvaluationResult>>('GET', `/evaluations/${evaluationId}/results`), [evaluationId]);
  const e = evaluation.data;
  return (
    <section aria-labelledby="eval-title">
      <p class="crumbs">
        <a href={link('evaluations', { blockId: e?.blockId })}>Evaluations</a> /
      </p>
      <h1 id="eval-title">
        Evaluation <code>{evaluationId.slice(0, 8)}</code> {e && <span class="badge">{e.status}</span>}
      </h1>
      <Status loading={evaluation.loading} error={evaluation.error} />
      {e && (
        <p class="muted small">
          Block {e.blockId} · version {e.version} · dataset {e.datasetId}
        </p>
      )}
      {e && <SummaryFacts summary={e.summary} />}
      <h2>Results</h2>
      <Status loading={results.loading} error={results.error} />
      <div class="scroll">
        <table>
          <thead>
            <tr>
              <th scope="col">Case</th>
              <th scope="col">Passed</th>
              <th scope="col">Score</th>
              <th scope="col">Output</th>
            </tr>
          </thead>
          <tbody>
            {items(results.data).map((r) => (
              <tr key={r.caseId}>
                <td>{r.caseName ?? r.caseId}</td>
                <td>{r.passed == null ? (r.status ?? '—') : r.passed ? 'yes' : 'no'}</td>
                <td>{num(r.score ?? meanScore(r))}</td>
                <td>
                  <pre class="small">{show(r.output ?? r.error ?? null)}</pre>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
    </section>
  );
}

function Side({ side }: { side: CaseSide | null }) {
  if (!side) return <span class="muted">—</span>;
  return (
    <>
      <span class={side.passed ? 'pass' : 'fail'}>{side.passed == null ? '—' : side.passed ? 'pass' : 'fail'}</span> <span class="muted">score {num(side.score)}</span>
      <pre class="small">{show(side.output ?? null)}</pre>
    </>
  );
}

export function ComparePage({ base, candidate }: { base: string; candidate: string }) {
  const [onlyChanged, setOnlyChanged] = useState(false);
  const comparison = useLoad(
    () => api<Comparison>('GET', `/evaluations/compare?base=${encodeURIComponent(base)}&candidate=${encodeURIComponent(candidate)}`),
    [base, candidate],
  );
  const c = comparison.data;
  const cases = (c?.cases ?? []).filter((row) => !onlyChanged || row.change !== 'unchanged');
  return (
    <section aria-labelledby="compare-title">
      <p class="crumbs">
        <a href={link('evaluations', { blockId: c?.base.blockId })}>Evaluations</a> /
      </p>
      <h1 id="compare-title">Compare versions</h1>
      <Status loading={comparison.loading} error={comparison.error} />
      {c && (
        <>
          <div class="compare-head">
            <div>
              <h2>Base: version {c.base.version}</h2>
              <SummaryFacts summary={c.base.summary} />
            </div>
            <div>
              <h2>Candidate: version {c.candidate.version}</h2>
              <SummaryFacts summary={c.candidate.summary} />
            </div>
          </div>
          <p class="compare-summary" data-testid="compare-summary">
            <span class="pass">{c.summary.improved} improved</span> · <span class="fail">{c.summary.regressed} regressed</span> · {c.summary.changed} changed ·{' '}
            {c.summary.unchanged} unchanged
          </p>
          <label class="check">
            <input type="checkbox" checked={onlyChanged} onChange={(e) => setOnlyChanged(e.currentTarget.checked)} /> Only cases that changed
          </label>
          <div class="scroll">
            <table class="compare">
              <thead>
                <tr>
                  <th scope="col">Case</th>
                  <th scope="col">Change</th>
                  <th scope="col">Base (v{c.base.version})</th>
                  <th scope="col">Candidate (v{c.candidate.version})</th>
                </tr>
              </thead>
              <tbody>
                {cases.map((row) => (
                  <tr key={row.caseId} class={`change-${row.change}`} data-case={row.caseId}>
                    <th scope="row">{row.caseName ?? row.caseId}</th>
                    <td>
                      <span class={`badge change-badge-${row.change}`}>{row.change}</span>
                    </td>
                    <td>
                      <Side side={row.base} />
                    </td>
                    <td>
                      <Side side={row.candidate} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </>
      )}
    </section>
  );
}
