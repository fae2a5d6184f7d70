/**
 * Hooks the triggers module listens to besides the run and conversation ones (declaration merging
 * into the kernel's hook map).
 */
declare module '../../kernel/hooks.js' {
  interface TrellisHooks {
    /**
     * A team's spending reached a budget of its own (declared here for outbound webhooks). Nothing
     * built in fires it: a run's or deployment's budget is told through `run.waiting` (reason
     * `budget`), which the outbound webhooks turn into `budget.reached` too. An embedder's own
     * billing may fire it; `key` tells one crossing from another (the budget and period).
     */
    'budget.reached': { teamId: string; key: string; budget: number; spent: number; period: string | null };
  }
}

export {};
