// The run page's table of top agents: selection score and held-out score, each with its 95%
// Wilson interval, and the agent a run should ship marked: the best held-out lower bound.

import type { LineageNode } from "../api/types";
import { h } from "../dom";
import * as fmt from "../format";
import { heldoutEstimate, selectionEstimate, type Estimate } from "../intervals";

const TOP = 8;

/** The run's utility version as far as its agents show it: the latest epoch any was scored in. */
export function currentEpoch(nodes: LineageNode[]): number | null {
  return nodes.length ? nodes.reduce((max, n) => Math.max(max, n.epoch), 0) : null;
}

/** The agent with the highest held-out lower bound (then the higher score, then the earlier). */
export function bestByHeldout(nodes: LineageNode[]): string | null {
  let best: { id: string; e: Estimate } | null = null;
  for (const node of nodes) {
    const e = heldoutEstimate(node);
    if (!e || node.status === "rejected") continue;
    if (!best || e.low > best.e.low || (e.low === best.e.low && e.value > best.e.value)) best = { id: node.id, e };
  }
  return best?.id ?? null;
}

/** The service's order: higher score first, then the earlier (nodes come in creation order). */
function byScore(a: LineageNode, b: LineageNode): number {
  return (b.score ?? -1) - (a.score ?? -1);
}

/** The top admitted agents by selection score, then every other agent with a held-out result. */
export function topRows(nodes: LineageNode[]): LineageNode[] {
  // One pass keeping the best few (a sort of 20,000 agents would hold up the page).
  const top: LineageNode[] = [];
  const heldout: LineageNode[] = [];
  for (const n of nodes) {
    if (n.status !== "admitted" || n.score === null) continue;
    if (heldoutEstimate(n)) heldout.push(n);
    if (top.length === TOP && byScore(n, top[TOP - 1] as LineageNode) >= 0) continue;
    let at = top.length;
    while (at > 0 && byScore(n, top[at - 1] as LineageNode) < 0) at -= 1;
    top.splice(at, 0, n);
    if (top.length > TOP) top.pop();
  }
  const shown = new Set(top.map((n) => n.id));
  return [...top, ...heldout.filter((n) => !shown.has(n.id)).sort(byScore)];
}

function cell(e: Estimate | null, fallback: string): HTMLElement {
  return h("td", { class: "estimate" }, e ? fmt.estimate(e) : fallback);
}

export function topAgents(nodes: LineageNode[], runId: string): HTMLElement {
  const rows = topRows(nodes);
  if (!rows.length) return h("p", { class: "muted" }, "No scored agent yet.");
  const best = bestByHeldout(nodes);
  const th = (text: string): HTMLElement => h("th", { scope: "col" }, text);
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "compact top-agents-table" },
      h(
        "caption",
        null,
        "Scores with 95% intervals and resolved/attempted. ",
        best ? "★ marks the best by held-out lower bound." : "No held-out results yet.",
      ),
      h("thead", null, h("tr", null, th("Agent"), th("Selection"), th("Held-out"), th("Epoch"))),
      h(
        "tbody",
        null,
        rows.map((n) =>
          h(
            "tr",
            { "data-id": n.id, class: n.id === best ? "heldout-best" : "" },
            h(
              "th",
              { scope: "row" },
              h("a", { href: `/agents/${n.id}?run=${runId}` }, h("code", null, fmt.shortId(n.id, 8))),
              n.id === best
                ? h(
                    "span",
                    { class: "best-mark", title: "best by held-out lower bound" },
                    " ★",
                    h("span", { class: "visually-hidden" }, " best by held-out lower bound"),
                  )
                : null,
            ),
            cell(selectionEstimate(n), fmt.score(n.score)),
            cell(heldoutEstimate(n), "—"),
            h("td", null, String(n.epoch)),
          ),
        ),
      ),
    ),
  );
}
