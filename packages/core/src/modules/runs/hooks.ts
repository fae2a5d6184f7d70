import type { RunSource, RunStatus, RunUsage } from './entities/run.entity.js';

/** Which run a run hook is about. */
export interface RunHookSubject {
  runId: string;
  documentId: string | null;
  projectId: string | null;
  teamId: string | null;
  userId: string;
  source: RunSource;
  version: string | null;
}

/**
 * Lifecycle hooks of runs (declaration merging into the kernel's hook map). They fire on the
 * process that executed the step, after it was stored; a handler that throws is logged and does
 * not change the run.
 */
declare module '../../kernel/hooks.js' {
  interface TrellisHooks {
    /** The first attempt of a run was claimed by an executor. */
    'run.started': RunHookSubject;
    /** A top-level block ended (its `block_end` is stored). */
    'run.blockFinished': RunHookSubject & { blockId: string; status: 'completed' | 'failed'; durationMs: number };
    /** The run stopped at an ask block and waits for an answer. */
    'run.waiting': RunHookSubject & { blockId: string; question: string; reason?: 'budget'; budget?: { scope: 'run' | 'deployment'; credits: number; spent: number; required: number } };
    /** The run ended (its final record and `run_complete` are stored). */
    'run.finished': RunHookSubject & {
      status: Extract<RunStatus, 'completed' | 'failed' | 'timed_out' | 'cancelled'>;
      output: unknown;
      error: { code: string; message: string } | null;
      usage: RunUsage;
      durationMs: number;
    };
  }
}

export {};
