// A run: header with budget and actions; the lineage as a tree (or a keyboard list); score and
// cost charts. Live: new events refresh the lineage in place, without a reload.

import { api, download } from "../api/client";
import type { LineageNode, LiveLineage, RunDetail, RunEvent, RunUsage } from "../api/types";
import { drawCostChart } from "../charts/cost";
import { legend, onResize } from "../charts/frame";
import { drawScoreChart } from "../charts/score";
import { announce, errorBox, h, keepFocus } from "../dom";
import * as fmt from "../format";
import { EventPoller, redraws } from "../live";
import { takePrefetched } from "../prefetch";
import { navigate, type Page } from "../router";
import type { LayoutKind } from "../tree/layout";
import { isColorBy, type ColorBy } from "../tree/colouring";
import { buildModel, type TreeModel } from "../tree/model";
import { TreeToolbar } from "../tree/toolbar";
import { TreeList } from "../tree/list";
import { TreeView } from "../tree/view";
import { badge, budgetMeters, runActions, scoreChip } from "../widgets";
import { currentEpoch, topAgents } from "./topAgents";

const DEFAULT_POLL_MS = 2000;

interface Tree {
  nodes: LineageNode[];
  model: TreeModel;
}

function purposeTable(usage: RunUsage): HTMLElement | string {
  if (!usage.by_purpose.length) return "";
  const th = (text: string): HTMLElement => h("th", { scope: "col" }, text);
  return h(
    "table",
    { class: "compact" },
    h("caption", { class: "visually-hidden" }, "Cost by purpose"),
    h("thead", null, h("tr", null, th("Purpose"), th("Calls"), th("Tokens"), th("USD"))),
    h(
      "tbody",
      null,
      usage.by_purpose.map((p) =>
        h(
          "tr",
          null,
          h("th", { scope: "row" }, p.purpose),
          h("td", null, fmt.integer(p.calls)),
          h("td", null, fmt.tokens(p.tokens)),
          h("td", null, fmt.usd(p.usd)),
        ),
      ),
    ),
  );
}

function header(run: RunDetail, epoch: number | null, refresh: () => void): HTMLElement {
  const best = run.progress.best_agent_id;
  const exportTop = h("button", { type: "button", "data-action": "export-top" }, "Top 5 agents (tar.gz)");
  exportTop.addEventListener("click", () => void download(`/api/runs/${run.id}/export?k=5`));
  const predictions = h("button", { type: "button", "data-action": "predictions" }, "Predictions (JSONL)");
  predictions.addEventListener("click", () => void download(`/api/runs/${run.id}/predictions`));
  return h(
    "div",
    { class: "run-head" },
    h(
      "dl",
      { class: "facts" },
      h("dt", null, "Status"),
      h("dd", null, badge(run.status), run.stop_reason ? ` ${run.stop_reason}` : ""),
      h("dt", null, "Run"),
      h("dd", null, h("code", null, run.id)),
      h("dt", null, "Seed"),
      h("dd", null, h("a", { href: `/agents/${run.seed_agent_id}?run=${run.id}` }, fmt.shortId(run.seed_agent_id))),
      h("dt", null, "Best"),
      h(
        "dd",
        null,
        scoreChip(run.progress.best_score),
        best
          ? [" ", h("a", { href: `/agents/${best}?run=${run.id}`, "data-role": "best-link" }, fmt.shortId(best))]
          : null,
      ),
      h("dt", null, "Benchmark"),
      h("dd", null, run.config.benchmark.name, ` · ${fmt.plural(run.stage_tasks.length, "stage")}`),
      epoch === null ? null : [h("dt", null, "Epoch"), h("dd", { "data-role": "epoch" }, String(epoch))],
    ),
    budgetMeters(run),
    h("div", { class: "run-tools" }, runActions(run, refresh), h("div", { class: "buttons" }, exportTop, predictions)),
  );
}

export const runPage: Page = (main, route) => {
  const runId = route.params.id ?? "";
  const pollMs = Math.max(250, Number(route.query.get("poll")) || DEFAULT_POLL_MS);
  document.title = "Run · Clade";
  const title = h("h1", null, "Run");
  const head = h("div", { class: "run-head-slot" });
  const surface = route.query.get("render");
  const treeView = new TreeView(
    { open: (id) => navigate(`/agents/${id}?run=${runId}`) },
    surface === "svg" || surface === "canvas" ? surface : "auto",
  );
  const list = new TreeList("Lineage list", (id) => navigate(`/agents/${id}?run=${runId}`));
  const scoreBox = h("div", { class: "chart-box", id: "score-chart" });
  const costBox = h("div", { class: "chart-box", id: "cost-chart" });
  const purposes = h("div", { class: "purposes" });
  const topBox = h("div", { class: "top-agents-box" });
  const live = h("p", { class: "live muted", role: "status" }, "Loading…");
  let layout: LayoutKind = "tidy";
  const asked = route.query.get("color");
  const colorBy: ColorBy = isColorBy(asked) ? asked : "score";
  let tree: Tree | null = null;
  let run: RunDetail | null = null;
  let usage: RunUsage | null = null;

  const toolbar = new TreeToolbar({
    search: (query) => (tree ? toolbar.showMatches(tree.model, query, treeView, list) : undefined),
    layout: (kind) => {
      layout = kind;
      if (tree) treeView.render(tree.model, layout, true);
    },
    fit: () => treeView.fit(),
    zoom: (factor) => treeView.zoomBy(factor),
    view: (which) => {
      treeView.element.hidden = which !== "tree";
      list.element.hidden = which !== "list";
      if (which === "list" && tree) list.render(tree.model);
      if (which === "tree") treeView.refit();
    },
    colorBy: (by) => {
      const colouring = treeView.setColorBy(by);
      if (tree) toolbar.showColouring(colouring, tree.model);
    },
  });
  toolbar.setColorBy(colorBy);
  treeView.setColorBy(colorBy);
  list.element.hidden = true;

  main.append(
    title,
    head,
    h(
      "div",
      { class: "run-layout" },
      h(
        "section",
        { class: "panel tree-panel", "aria-labelledby": "lineage-title" },
        h("div", { class: "panel-head" }, h("h2", { id: "lineage-title" }, "Lineage"), live),
        toolbar.element,
        treeView.element,
        list.element,
        toolbar.legend,
      ),
      h(
        "aside",
        { class: "side" },
        h("section", { class: "panel top-agents" }, h("h2", null, "Top agents"), topBox),
        h(
          "section",
          { class: "panel" },
          h("h2", null, "Score over steps"),
          legend([
            ["best", "best so far"],
            ["mean", "archive mean"],
          ]),
          scoreBox,
        ),
        h("section", { class: "panel" }, h("h2", null, "Cost over time"), costBox, purposes),
      ),
    ),
  );

  let chartsFrame = 0;
  let chartsTask = 0;
  // Each chart in its own task, so that input (a zoom, a hover) gets in between.
  const drawCharts = (): void => {
    chartsFrame = 0;
    if (tree) {
      const nodes = tree.nodes;
      keepFocus(topBox, () => topBox.replaceChildren(topAgents(nodes, runId)));
      drawScoreChart(scoreBox, tree.nodes);
    }
    window.clearTimeout(chartsTask);
    chartsTask = window.setTimeout(() => {
      if (!run || !usage) return;
      drawCostChart(costBox, usage, run.budget.max_usd);
      purposes.replaceChildren(purposeTable(usage));
      performance.mark("clade:charts-drawn");
    }, 0);
  };
  // After the tree is on screen: the charts can wait a frame, the tree should not.
  const scheduleCharts = (): void => {
    if (!chartsFrame) chartsFrame = requestAnimationFrame(() => window.setTimeout(drawCharts, 0));
  };

  /** The lineage, with the event cursor to poll from. */
  const fetchTree = async (): Promise<Tree & { cursor: number }> => {
    const prefetched = (await takePrefetched(`/api/runs/${runId}/lineage/live`)) as LiveLineage | null;
    const lineage = prefetched ?? (await api("get", "/api/runs/{run_id}/lineage/live", { path: { run_id: runId } }));
    performance.mark("clade:lineage-fetched");
    return { nodes: lineage.nodes, model: buildModel(lineage.nodes), cursor: lineage.cursor };
  };

  const fetchRun = (): Promise<[RunDetail, RunUsage]> =>
    Promise.all([
      api("get", "/api/runs/{run_id}", { path: { run_id: runId } }),
      api("get", "/api/runs/{run_id}/usage", { path: { run_id: runId } }),
    ]);

  const showTree = (next: Tree, first: boolean, fresh: string[] = []): void => {
    tree = next;
    if (first) layout = next.model.count > 400 ? "radial" : "tidy";
    toolbar.setLayout(layout);
    treeView.render(next.model, layout, first, fresh);
    toolbar.showColouring(treeView.colouring, next.model);
    if (!list.element.hidden) list.render(next.model);
    scheduleCharts();
    live.textContent = `${fmt.plural(next.model.count, "agent")} · live, updated ${new Date().toLocaleTimeString("en-GB")}`;
  };

  const showRun = ([nextRun, nextUsage]: [RunDetail, RunUsage]): void => {
    run = nextRun;
    usage = nextUsage;
    document.title = `${run.name} · Run · Clade`;
    title.textContent = `Run ${run.name}`;
    const epoch = tree ? currentEpoch(tree.nodes) : null;
    keepFocus(head, () => head.replaceChildren(header(nextRun, epoch, () => void refresh([]))));
    scheduleCharts();
  };

  const refresh = async (events: RunEvent[]): Promise<void> => {
    if (events.length && !events.some(redraws)) return;
    const known = new Set(tree?.nodes.map((n) => n.id));
    const [nextTree, nextRun] = await Promise.all([fetchTree(), fetchRun()]);
    if (closed) return;
    const fresh = nextTree.nodes.filter((n) => !known.has(n.id)).map((n) => n.id);
    showTree(nextTree, false, fresh);
    showRun(nextRun);
    if (fresh.length) announce(`${fmt.plural(fresh.length, "new agent")} in the lineage`);
  };

  let poller: EventPoller | null = null;
  let stopResize = (): void => undefined;
  let closed = false;
  (async () => {
    // The tree first and on its own: the run's header and charts follow.
    const first = await fetchTree();
    if (closed) return;
    showTree(first, true);
    performance.mark("clade:tree-drawn"); // marks are read by perf/dashboard_tree.py
    poller = new EventPoller(runId, first.cursor, pollMs, refresh);
    poller.start();
    stopResize = onResize(scoreBox, () => drawCharts());
    const details = await fetchRun();
    if (!closed) showRun(details);
  })().catch((error: unknown) => {
    live.textContent = "";
    main.append(errorBox(`Could not load run ${runId}: ${String(error)}`));
  });

  return () => {
    closed = true;
    cancelAnimationFrame(chartsFrame);
    window.clearTimeout(chartsTask);
    poller?.stop();
    stopResize();
    treeView.destroy();
  };
};
