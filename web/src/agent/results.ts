// Per-task results of an agent in a run: one row per evaluation; a row opens to the task's
// grade, test statuses, test log, the agent's diff, its trajectory and its log.

import { api } from "../api/client";
import type { EvaluationPublic, EvaluationResult, EvaluationStatus } from "../api/types";
import { errorBox, h } from "../dom";
import * as fmt from "../format";
import { renderDiff } from "./diff";
import { renderTrajectory } from "./trajectory";

export function verdict(e: { status: EvaluationStatus; resolved: boolean | null; tampered?: boolean } | undefined): {
  text: string;
  cls: string;
} {
  if (!e) return { text: "not evaluated", cls: "none" };
  if (e.status !== "done") return { text: e.status, cls: "pending" };
  // A forged pass is never resolved; it is shown as what it is.
  if (e.tampered) return { text: "⚠ tampered", cls: "tampered" };
  return e.resolved ? { text: "✓ resolved", cls: "resolved" } : { text: "✗ not resolved", cls: "failed" };
}

function droppedBadge(paths: string[]): HTMLElement | null {
  if (!paths.length) return null;
  return h(
    "span",
    { class: "badge dropped", title: `Left out of grading as test infrastructure: ${paths.join(", ")}` },
    `${paths.length} dropped for grading`,
  );
}

/** A list of the diff's paths with what grading saw in each: one section of the evaluation. */
function pathList(cls: string, title: string, note: string, byPath: Record<string, string>): HTMLElement | null {
  const paths = Object.keys(byPath);
  if (!paths.length) return null;
  return h(
    "div",
    { class: cls },
    h("h4", null, title),
    h("p", { class: "muted" }, note),
    h(
      "ul",
      null,
      paths.map((path) => h("li", null, h("code", null, path), ` — ${byPath[path] ?? ""}`)),
    ),
  );
}

function droppedList(dropped: Record<string, string>): HTMLElement | null {
  return pathList(
    "dropped-for-grading",
    "Dropped for grading",
    "These changes of the agent's diff are test infrastructure: grading left them out and ran the rest.",
    dropped,
  );
}

function runnerTamperingList(flags: Record<string, string>): HTMLElement | null {
  return pathList(
    "runner-tampering",
    "Reaches into the test runner",
    "Code outside the tests that names the test runner's internals. Flagged, not a verdict: the must-fail twins decide.",
    flags,
  );
}

function testTable(result: EvaluationResult): HTMLElement {
  const groups = new Map<string, string>();
  Object.keys(result.fail_to_pass ?? {}).forEach((t) => groups.set(t, "FAIL_TO_PASS"));
  Object.keys(result.pass_to_pass ?? {}).forEach((t) => groups.set(t, "PASS_TO_PASS"));
  const tests = { ...(result.tests ?? {}), ...(result.fail_to_pass ?? {}), ...(result.pass_to_pass ?? {}) };
  const names = Object.keys(tests).sort(
    (a, b) => (groups.get(a) ?? "z").localeCompare(groups.get(b) ?? "z") || a.localeCompare(b),
  );
  if (!names.length) return h("p", { class: "muted" }, "No test statuses were recorded.");
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "compact tests" },
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          h("th", { scope: "col" }, "Test"),
          h("th", { scope: "col" }, "Group"),
          h("th", { scope: "col" }, "Status"),
        ),
      ),
      h(
        "tbody",
        null,
        names.map((name) => {
          const status = tests[name] ?? "";
          return h(
            "tr",
            null,
            h("td", null, h("code", null, name)),
            h("td", null, groups.get(name) ?? "other"),
            h("td", { class: `test-${status.toLowerCase()}` }, status),
          );
        }),
      ),
    ),
  );
}

function detail(result: EvaluationResult | null | undefined): HTMLElement {
  if (!result) return h("p", { class: "muted" }, "No result yet.");
  const d = result.durations;
  return h(
    "div",
    { class: "evaluation-detail" },
    h(
      "p",
      null,
      h("strong", null, result.resolved ? "Resolved. " : "Not resolved. "),
      result.grade_reason ?? "",
      result.patch_applied === false ? " The agent's patch did not apply." : "",
      result.timed_out ? " The agent timed out." : "",
    ),
    result.tampered
      ? h(
          "p",
          { class: "error-box tampered-evidence" },
          h("strong", null, "Tampered: "),
          `the test results were forged, so this evaluation is not resolved and scores 0. Evidence: ${result.tampered}`,
        )
      : null,
    droppedList(result.dropped_for_grading ?? {}),
    runnerTamperingList(result.runner_tampering ?? {}),
    result.infrastructure_failure
      ? h(
          "p",
          { class: "error-box" },
          `Not run (an infrastructure failure, not the agent's): ${result.infrastructure_failure}`,
        )
      : null,
    result.failure ? h("p", { class: "error-box" }, result.failure) : null,
    ...(result.warnings ?? []).map((warning) => h("p", { class: "warning-box" }, `Warning: ${warning}`)),
    d
      ? h(
          "p",
          { class: "muted" },
          `setup ${d.setup_s?.toFixed(1)}s · agent ${d.agent_s?.toFixed(1)}s · grading ${d.grade_s?.toFixed(1)}s · exit code ${result.agent_exit_code ?? "—"}`,
        )
      : null,
    h("h4", null, "Tests"),
    testTable(result),
    h("h4", null, "Test log"),
    result.test_log
      ? h("pre", { class: "log test-log", tabindex: 0 }, result.test_log)
      : h("p", { class: "muted" }, "Empty."),
    h("h4", null, "The agent's diff"),
    renderDiff(result.diff ?? "", "The agent's answer to the task"),
    h(
      "details",
      { class: "trajectory-box", open: true },
      h("summary", null, "Trajectory"),
      renderTrajectory(result.trajectory),
    ),
    result.agent_log
      ? h("details", null, h("summary", null, "Agent log"), h("pre", { class: "log" }, result.agent_log))
      : null,
  );
}

export function resultsTable(agentId: string, evaluations: EvaluationPublic[], open: string | null): HTMLElement {
  if (!evaluations.length) return h("p", { class: "muted" }, "No task was evaluated in this run.");
  const body = h("tbody");
  for (const e of evaluations) {
    const v = verdict(e);
    const detailId = `eval-${e.id}`;
    const button = h(
      "button",
      { type: "button", class: "small", "aria-expanded": "false", "aria-controls": detailId, "data-action": "expand" },
      "Show",
    );
    const cell = h("td", { colspan: 6 });
    const extra = h("tr", { class: "evaluation-extra", id: detailId, hidden: true }, cell);
    let loaded = false;
    const toggle = (): void => {
      const opening = extra.hidden;
      extra.hidden = !opening;
      button.setAttribute("aria-expanded", String(opening));
      button.textContent = opening ? "Hide" : "Show";
      if (opening && !loaded) {
        loaded = true;
        cell.replaceChildren(h("p", { class: "muted" }, "Loading…"));
        api("get", "/api/agents/{agent_id}/evaluations/{evaluation_id}", {
          path: { agent_id: agentId, evaluation_id: e.id },
        })
          .then((full) => cell.replaceChildren(detail(full.result)))
          .catch((error: unknown) => cell.replaceChildren(errorBox(String(error))));
      }
    };
    button.addEventListener("click", toggle);
    body.append(
      h(
        "tr",
        { class: `evaluation verdict-${v.cls}`, "data-task": e.task_id },
        h("th", { scope: "row" }, h("code", null, e.task_id)),
        h("td", { class: "wide-only" }, String(e.stage + 1)),
        h("td", { class: `verdict ${v.cls}` }, v.text, " ", droppedBadge(e.dropped_for_grading ?? [])),
        h("td", { class: "num" }, fmt.usd(e.cost_usd)),
        h("td", { class: "num wide-only" }, fmt.tokens(e.prompt_tokens + e.completion_tokens)),
        h("td", null, button),
      ),
      extra,
    );
    if (open === detailId) {
      toggle();
      window.setTimeout(() => extra.scrollIntoView({ block: "start" }), 0);
    }
  }
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "results" },
      h("caption", { class: "visually-hidden" }, "Results per task"),
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          h("th", { scope: "col" }, "Task"),
          h("th", { scope: "col", class: "wide-only" }, "Stage"),
          h("th", { scope: "col" }, "Result"),
          h("th", { scope: "col", class: "num" }, "Cost"),
          h("th", { scope: "col", class: "num wide-only" }, "Tokens"),
          h("th", { scope: "col" }, h("span", { class: "visually-hidden" }, "Details")),
        ),
      ),
      body,
    ),
  );
}
