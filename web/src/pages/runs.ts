// The runs page: every run with its status, progress against budget, best score and actions.

import { api } from "../api/client";
import type { RunPublic } from "../api/types";
import { errorBox, h, keepFocus } from "../dom";
import * as fmt from "../format";
import type { Page } from "../router";
import { badge, budgetMeters, runActions, scoreChip } from "../widgets";

const REFRESH_MS = 5000;

function runCard(run: RunPublic, refresh: () => void): HTMLElement {
  const best = run.progress.best_agent_id;
  return h(
    "article",
    { class: "run-card", "data-key": run.id, "aria-labelledby": `run-${run.id}` },
    h(
      "header",
      null,
      h("h2", { id: `run-${run.id}` }, h("a", { href: `/runs/${run.id}` }, run.name)),
      badge(run.status),
    ),
    h(
      "dl",
      { class: "facts" },
      h("dt", null, "Run"),
      h("dd", null, h("code", null, run.id)),
      h("dt", null, "Best score"),
      h(
        "dd",
        null,
        scoreChip(run.progress.best_score),
        best ? [" ", h("a", { href: `/agents/${best}?run=${run.id}` }, fmt.shortId(best))] : null,
      ),
      h("dt", null, "Started"),
      h("dd", null, fmt.dateTime(run.created_at)),
      run.progress.steps_in_flight > 0
        ? [h("dt", null, "In flight"), h("dd", null, fmt.plural(run.progress.steps_in_flight, "step"))]
        : null,
      run.stop_reason ? [h("dt", null, "Stopped"), h("dd", null, run.stop_reason)] : null,
    ),
    budgetMeters(run),
    runActions(run, refresh),
  );
}

export const runsPage: Page = (main) => {
  document.title = "Runs · Clade";
  const list = h("div", { class: "run-grid", "aria-live": "off" }, h("p", { class: "muted" }, "Loading runs…"));
  const count = h("p", { class: "muted", id: "runs-count" });
  main.append(
    h(
      "div",
      { class: "page-head" },
      h("h1", null, "Runs"),
      h("a", { class: "button primary", href: "/runs/new" }, "Start a run"),
    ),
    count,
    list,
  );
  let timer = 0;
  let stopped = false;
  const load = (): void => {
    window.clearTimeout(timer);
    api("get", "/api/runs", { query: { limit: 100 } })
      .then((page) => {
        if (stopped) return;
        count.textContent = page.total === 0 ? "" : `${fmt.plural(page.total, "run")}, newest first`;
        const cards = page.items.length
          ? page.items.map((run) => runCard(run, load))
          : [h("p", null, "No runs yet. ", h("a", { href: "/runs/new" }, "Start one"), ".")];
        keepFocus(list, () => list.replaceChildren(...cards));
      })
      .catch((error: unknown) => list.replaceChildren(errorBox(`Could not load the runs: ${String(error)}`)))
      .finally(() => {
        if (!stopped) timer = window.setTimeout(load, REFRESH_MS);
      });
  };
  load();
  return () => {
    stopped = true;
    window.clearTimeout(timer);
  };
};
