// Pieces several pages share: status badges, budget meters, run actions, score swatches.

import { api, ApiError } from "./api/client";
import type { RunPublic, RunStatus } from "./api/types";
import { scoreColor } from "./colors";
import { announce, h } from "./dom";
import * as fmt from "./format";

export function badge(status: string): HTMLElement {
  return h("span", { class: `badge status-${status}` }, status);
}

export function scoreChip(value: number | null | undefined): HTMLElement {
  const chip = h("span", { class: "score-chip" }, fmt.score(value));
  if (value !== null && value !== undefined) {
    chip.prepend(h("span", { class: "swatch", style: `background:${scoreColor(value)}`, "aria-hidden": "true" }));
  }
  return chip;
}

/** One budget dimension as a labelled bar: "children 3 / 20". */
export function meter(label: string, value: number, max: number | null, show: (v: number) => string): HTMLElement {
  // null is "no limit"; 0 is a limit too (max_children 0: an evaluation-only run).
  const limited = max !== null;
  const fraction = limited && max > 0 ? Math.min(1, value / max) : 0;
  const text = limited ? `${show(value)} / ${show(max)}` : `${show(value)} (no limit)`;
  const bar = h("div", {
    class: "meter-bar",
    role: "progressbar",
    "aria-label": label,
    "aria-valuemin": 0,
    "aria-valuemax": limited ? max : undefined,
    "aria-valuenow": limited ? Math.min(value, max) : undefined,
    "aria-valuetext": text,
  });
  bar.append(
    h("span", { class: fraction >= 0.9 ? "meter-fill full" : "meter-fill", style: `width:${fraction * 100}%` }),
  );
  return h(
    "div",
    { class: "meter", "data-meter": label },
    h("div", { class: "meter-label" }, h("span", null, label), h("span", { class: "meter-value" }, text)),
    bar,
  );
}

export function budgetMeters(run: RunPublic): HTMLElement {
  const { budget, progress } = run;
  return h(
    "div",
    { class: "meters" },
    meter("Children", progress.children, budget.max_children, fmt.integer),
    meter("Cost", progress.usd, budget.max_usd, fmt.usd),
    meter("Tokens", progress.tokens, budget.max_tokens, fmt.tokens),
    meter("Time", progress.elapsed_s, budget.max_wall_time_s, fmt.duration),
  );
}

// The run states each action may start from (service/runs.py TRANSITIONS).
const ACTIONS: readonly { action: "pause" | "resume" | "cancel"; label: string; from: readonly RunStatus[] }[] = [
  { action: "pause", label: "Pause", from: ["running"] },
  { action: "resume", label: "Resume", from: ["paused"] },
  { action: "cancel", label: "Cancel", from: ["running", "paused"] },
];

/** Pause / resume / cancel buttons; each is enabled only where the run can take it. */
export function runActions(run: RunPublic, changed: (run: RunPublic) => void): HTMLElement {
  const status = h("p", { class: "action-status", role: "status" });
  const buttons = ACTIONS.map(({ action, label, from }) => {
    const possible = from.includes(run.status);
    const button = h(
      "button",
      {
        type: "button",
        class: action === "cancel" ? "danger" : "",
        disabled: !possible,
        "data-action": action,
        "aria-label": `${label} run ${run.name}`,
      },
      label,
    );
    button.addEventListener("click", () => {
      if (action === "cancel" && !window.confirm(`Cancel run ${run.name}? Work in flight is stopped.`)) return;
      button.disabled = true;
      status.textContent = `${label}…`;
      api("post", `/api/runs/{run_id}/${action}`, { path: { run_id: run.id }, admin: true })
        .then((updated) => {
          status.textContent = "";
          announce(`Run ${updated.name} is ${updated.status}`);
          changed(updated);
        })
        .catch((error: unknown) => {
          button.disabled = false;
          status.textContent = error instanceof ApiError ? error.message : String(error);
        });
    });
    return button;
  });
  return h("div", { class: "run-actions" }, h("div", { class: "buttons" }, buttons), status);
}
