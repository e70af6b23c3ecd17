// Live updates: poll a run's events after the last id seen, and hand new ones over.

import { api } from "./api/client";
import { isRunEvent, type RunEvent } from "./api/types";

export class EventPoller {
  private timer = 0;
  private stopped = false;

  constructor(
    private readonly runId: string,
    private after: number,
    private readonly intervalMs: number,
    private readonly onEvents: (events: RunEvent[]) => Promise<void>,
  ) {}

  start(): void {
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    window.clearTimeout(this.timer);
  }

  private schedule(): void {
    if (!this.stopped) this.timer = window.setTimeout(() => void this.poll(), this.intervalMs);
  }

  private async poll(): Promise<void> {
    try {
      const events: RunEvent[] = [];
      for (;;) {
        const page = await api("get", "/api/runs/{run_id}/events", {
          path: { run_id: this.runId },
          query: { after: this.after, limit: 1000 },
        });
        const batch = (page as unknown[]).filter(isRunEvent);
        events.push(...batch);
        this.after = batch.reduce((max, e) => Math.max(max, e.id), this.after);
        if (batch.length < 1000 || this.stopped) break;
      }
      if (events.length && !this.stopped) await this.onEvents(events);
    } catch {
      // The service may be restarting: try again at the next tick.
    } finally {
      this.schedule();
    }
  }
}

/** Events that change the tree, the scores or the run's state. */
export const TREE_EVENTS = new Set([
  "child_created",
  "agent_admitted",
  "agent_rejected",
  "step_rejected",
  "evaluation_done",
  "run_paused",
  "run_running",
  "run_cancelled",
  "run_completed",
  "run_failed",
]);
