import { InProcessPubSub, type PubSub } from '../../../ports/pubsub.js';
import { runControlTopic } from './event-text.js';

/** The one PubSub topic that tells the process executing a run to stop it: `cancel <run id>`. */
export const RUN_CONTROL_TOPIC = 'runs:control';

const CANCEL = 'cancel ';

/**
 * How a cancel reaches the process that executes the run, wherever that is: one subscription per
 * process to `RUN_CONTROL_TOPIC`, kept for the process's life, and the runs it executes listening
 * on it by id. A topic per run cost every run a SUBSCRIBE and an UNSUBSCRIBE on a shared PubSub
 * (two Redis round trips, and their CPU, in every BullMQ worker's run); cancels are rare, so every
 * process hearing every cancel costs little.
 *
 * The message is the fast path only: a run whose cancel it missed (its process was reconnecting
 * to Redis) stops at its next checkpoint, which is written only while the run's
 * `cancelRequested` is false.
 */
export class RunControlChannel {
  /** The runs this process executes, each listening on its id (the in-process PubSub as a local dispatcher). */
  private readonly runs = new InProcessPubSub();
  private subscribed: Promise<unknown> | null = null;

  constructor(private readonly pubsub: PubSub) {}

  /** Calls `onCancel` when the run is cancelled, until the returned function is called; resolves once the subscription is live. */
  async listen(runId: string, onCancel: () => void): Promise<() => Promise<void>> {
    const stop = await this.runs.subscribe(runId, () => onCancel());
    try {
      await (this.subscribed ??= this.pubsub.subscribe(RUN_CONTROL_TOPIC, (message) => this.receive(message)).catch((error: unknown) => {
        // Tried again by the next run.
        this.subscribed = null;
        throw error;
      }));
    } catch (error) {
      await stop();
      throw error;
    }
    return stop;
  }

  /**
   * Tells whichever process executes the run to stop it. Also published on the run's own topic
   * (`runs:control:<id>`), where processes of versions before this channel listen, so a cancel
   * reaches them during a rolling upgrade.
   */
  static async cancel(pubsub: PubSub, runId: string): Promise<void> {
    await Promise.all([pubsub.publish(RUN_CONTROL_TOPIC, CANCEL + runId), pubsub.publish(runControlTopic(runId), 'cancel')]);
  }

  private receive(message: Uint8Array | string): void {
    const text = typeof message === 'string' ? message : Buffer.from(message).toString('utf8');
    if (text.startsWith(CANCEL)) void this.runs.publish(text.slice(CANCEL.length), CANCEL);
  }
}
