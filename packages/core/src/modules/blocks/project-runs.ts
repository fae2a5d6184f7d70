import type { EntityManager } from '@mikro-orm/core';
import type { ServiceIdentifier } from 'inversify';
import type { Paging } from '../../kernel/http/dto/paging.js';

/** One run in a project's run list (`GET /project/:projectId/runs`). */
export interface ProjectRunSummary {
  id: string;
  /** The document (or block: same id) that ran. */
  documentId: string;
  status: string;
  createdAt: string;
  updatedAt: string;
  /** Anything else the run module records about a run (inputs, timings, usage, error...). */
  [field: string]: unknown;
}

/**
 * The list behind `GET /project/:projectId/runs`, implemented by the module that records runs and
 * bound to `projectRunsServiceIdentifier`. The route checks that the caller may read the project
 * before calling it; `list` answers that project's runs, newest first, one page of them.
 * While nothing is bound no module records runs, and the list is empty.
 */
export interface ProjectRuns {
  list(em: EntityManager, projectId: string, page: Paging): Promise<{ items: ProjectRunSummary[]; total: number }>;
}

export const projectRunsServiceIdentifier: ServiceIdentifier<ProjectRuns> = Symbol.for('@trellis/core/ProjectRuns');

/**
 * Told when a deployment's budget was raised or cleared (`POST /block/:blockId/deploy`,
 * `PUT /block/:bid/deployment`), by the module that runs deployments: it resumes the runs that
 * wait for that budget. Bound to `deploymentBudgetsServiceIdentifier`; while nothing is bound no
 * run can wait for one.
 */
export interface DeploymentBudgets {
  changed(blockId: string, before: number | null, after: number | null): Promise<unknown>;
}

export const deploymentBudgetsServiceIdentifier: ServiceIdentifier<DeploymentBudgets> = Symbol.for('@trellis/core/DeploymentBudgets');
