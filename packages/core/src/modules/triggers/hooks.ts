/**
 * Hooks the triggers module listens to besides the run and conversation ones (declaration merging
 * into the kernel's hook map).
 */
declare module '../../kernel/hooks.js' {
  interface TrellisHooks {
    /**
     * A team's spending reached a budget it set (declared here for outbound webhooks; billing fires
     * it once per budget and period). `key` tells one crossing from another (the budget and period).
     */
    'budget.reached': { teamId: string; key: string; budget: number; spent: number; period: string | null };
  }
}

export {};
