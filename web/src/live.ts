// Live updates: poll a run's events after the last id seen, and hand new ones over.

import { api } from "./api/client";
import { isRunEvent, type EventKind, type RunEvent } from "./api/types";

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

/** What each kind of event does to a run's page: `redraw` fetches its tree and header again (the
 * event changed the tree, the scores or the run's state); `none` leaves the page as it is. An
 * unreadable event (a stored payload that no longer fits its kind) may be any of them: redraw. */
export const ON_EVENT = {
  seed_imported: "none",
  run_created: "none",
  run_paused: "redraw",
  run_running: "redraw",
  run_cancelled: "redraw",
  run_completed: "redraw",
  step_opened: "none",
  crossover_opened: "none",
  child_created: "redraw",
  step_rejected: "redraw",
  evaluation_done: "redraw",
  agent_admitted: "redraw",
  agent_rejected: "redraw",
  agent_rescored: "none",
  stage_stopped: "redraw",
  epoch_started: "none",
  island_migration: "none",
  experience_updated: "none",
  heldout_started: "none",
  heldout_finished: "none",
  policy_record: "none",
  driver_error: "none",
  unreadable: "redraw",
} as const satisfies Record<EventKind, "redraw" | "none">;

/** Whether the event changes what the run's page shows (a kind this build does not know: no). */
export function redraws(event: RunEvent): boolean {
  const effects: Partial<Record<string, "redraw" | "none">> = ON_EVENT;
  return effects[event.kind] === "redraw";
}
