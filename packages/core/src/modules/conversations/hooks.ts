/** Lifecycle hooks of conversations (declaration merging into the kernel's hook map). */
declare module '../../kernel/hooks.js' {
  interface TrellisHooks {
    /**
     * A conversation turn ended and its assistant message is stored: `completed`, `failed` (the
     * provider or a tool failed; the message keeps what was shown) or `stopped` (by the stop
     * endpoint or a cancelled run).
     */
    'conversation.turnFinished': {
      conversationId: string;
      messageId: string;
      userId: string;
      teamId: string | null;
      status: 'completed' | 'failed' | 'stopped';
      usage: { inputTokens: number; outputTokens: number; credits: number } | null;
    };
  }
}

export {};
