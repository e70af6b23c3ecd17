// The agent re-scored on other solving models (`clade agent transfer`): one row per model,
// pooled over the evaluation-only runs that named the agent, best rate first.

import type { TransferRow } from "../api/types";
import { h } from "../dom";
import * as fmt from "../format";

export function transferTable(rows: TransferRow[]): HTMLElement {
  if (!rows.length)
    return h(
      "p",
      { class: "muted" },
      "Not scored on other models yet: ",
      h("code", null, "clade agent transfer AGENT --model M"),
      " runs it.",
    );
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "compact transfer-table", "data-role": "transfer" },
      h("caption", { class: "visually-hidden" }, "Scores on other models"),
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          ["Model", "Benchmark", "Resolved", "Rate [95% interval]", "Cost", "Runs"].map((t) =>
            h("th", { scope: "col" }, t),
          ),
        ),
      ),
      h(
        "tbody",
        null,
        rows.map((row) =>
          h(
            "tr",
            { "data-model": row.model },
            h("th", { scope: "row" }, h("code", null, [row.model, ...row.fallbacks].join(" › "))),
            h("td", null, `${row.benchmark} (${fmt.plural(row.tasks, "task")})`),
            h("td", null, `${row.resolved} / ${row.total}`),
            h(
              "td",
              null,
              row.rate === null || row.low === null || row.high === null
                ? "—"
                : `${fmt.score(row.rate)} [${fmt.score(row.low)}, ${fmt.score(row.high)}]`,
            ),
            h("td", null, fmt.usd(row.usd)),
            h("td", null, row.runs.length + (row.running ? ` (${row.running} running)` : "")),
          ),
        ),
      ),
    ),
  );
}
