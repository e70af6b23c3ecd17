// Two agents' per-task results side by side; the tasks one solves and the other does not first.

import { api } from "../api/client";
import type { AgentDetail, AgentInRun, EvaluationPublic } from "../api/types";
import { verdict } from "../agent/results";
import { errorBox, fill, h } from "../dom";
import * as fmt from "../format";
import { navigate, type Page } from "../router";

export interface TaskRow {
  task: string;
  a: EvaluationPublic | undefined;
  b: EvaluationPublic | undefined;
  group: 0 | 1 | 2 | 3 | 4; // 0: only A solves, 1: only B, 2: both, 3: neither, 4: not comparable yet
}

const solved = (e: EvaluationPublic | undefined): boolean | null =>
  e && e.status === "done" ? e.resolved === true : null;

export function compareRows(a: EvaluationPublic[], b: EvaluationPublic[]): TaskRow[] {
  const byTask = (list: EvaluationPublic[]) => new Map(list.map((e) => [e.task_id, e]));
  const ma = byTask(a);
  const mb = byTask(b);
  const tasks = [...new Set([...ma.keys(), ...mb.keys()])];
  const rows = tasks.map((task): TaskRow => {
    const ea = ma.get(task);
    const eb = mb.get(task);
    const sa = solved(ea);
    const sb = solved(eb);
    const group = sa && !sb ? 0 : sb && !sa ? 1 : sa && sb ? 2 : sa === false && sb === false ? 3 : 4;
    return { task, a: ea, b: eb, group };
  });
  return rows.sort((x, y) => x.group - y.group || x.task.localeCompare(y.task));
}

function membership(agent: AgentDetail, runId: string | null): AgentInRun | undefined {
  return agent.runs.find((r) => r.run_id === runId) ?? agent.runs[0];
}

function pickRun(a: AgentDetail, b: AgentDetail, wanted: string | null): string | null {
  const shared = a.runs.map((r) => r.run_id).filter((id) => b.runs.some((r) => r.run_id === id));
  if (wanted && shared.includes(wanted)) return wanted;
  return shared[0] ?? wanted;
}

function cell(agentId: string, runId: string | undefined, e: EvaluationPublic | undefined): HTMLElement {
  const v = verdict(e);
  const content = e && runId ? h("a", { href: `/agents/${agentId}?run=${runId}#eval-${e.id}` }, v.text) : v.text;
  return h("td", { class: `verdict ${v.cls}` }, content);
}

const GROUP_LABEL = ["only A solves", "only B solves", "both solve", "neither solves", "not comparable yet"];

export const comparePage: Page = (main, route) => {
  document.title = "Compare · Clade";
  const a = route.query.get("a") ?? "";
  const b = route.query.get("b") ?? "";
  const inputA = h("input", {
    id: "compare-a",
    name: "a",
    value: a,
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "agent id",
  });
  const inputB = h("input", {
    id: "compare-b",
    name: "b",
    value: b,
    autocomplete: "off",
    spellcheck: "false",
    placeholder: "agent id",
  });
  const form = h(
    "form",
    { class: "compare-form" },
    h("div", { class: "field" }, h("label", { for: "compare-a" }, "Agent A"), inputA),
    h("div", { class: "field" }, h("label", { for: "compare-b" }, "Agent B"), inputB),
    h("button", { type: "submit", class: "primary" }, "Compare"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const run = route.query.get("run");
    navigate(
      `/compare?a=${encodeURIComponent(inputA.value.trim())}&b=${encodeURIComponent(inputB.value.trim())}${run ? `&run=${run}` : ""}`,
    );
  });
  const out = h("div", { class: "compare-out" });
  main.append(h("h1", null, "Compare two agents"), form, out);
  if (!a || !b) {
    out.append(h("p", { class: "muted" }, "Give two agent ids (the agent page links here with its parent)."));
    return;
  }
  out.append(h("p", { class: "muted" }, "Loading…"));
  let closed = false;
  Promise.all([
    api("get", "/api/agents/{agent_id}", { path: { agent_id: a } }),
    api("get", "/api/agents/{agent_id}", { path: { agent_id: b } }),
  ])
    .then(([agentA, agentB]) => {
      if (closed) return;
      const runId = pickRun(agentA, agentB, route.query.get("run"));
      const ma = membership(agentA, runId);
      const mb = membership(agentB, runId);
      const rows = compareRows(ma?.evaluations ?? [], mb?.evaluations ?? []);
      const count = (g: number) => rows.filter((r) => r.group === g).length;
      const label = (agent: AgentDetail, m: AgentInRun | undefined) =>
        h(
          "span",
          null,
          h(
            "a",
            { href: `/agents/${agent.id}${m ? `?run=${m.run_id}` : ""}` },
            h("code", null, fmt.shortId(agent.id, 12)),
          ),
          ` · score ${fmt.score(m?.score)}`,
        );
      fill(
        out,
        h(
          "p",
          { class: "compare-summary" },
          `A solves ${fmt.plural(count(0), "task")} that B does not; B solves ${fmt.plural(count(1), "task")} that A does not; both solve ${count(2)}, neither ${count(3)}.`,
        ),
        runId ? h("p", { class: "muted" }, "Results from run ", h("a", { href: `/runs/${runId}` }, runId), ".") : null,
        h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { class: "results compare" },
            h("caption", { class: "visually-hidden" }, "Per-task results of A and B"),
            h(
              "thead",
              null,
              h(
                "tr",
                null,
                h("th", { scope: "col" }, "Task"),
                h("th", { scope: "col" }, "A ", label(agentA, ma)),
                h("th", { scope: "col" }, "B ", label(agentB, mb)),
                h("th", { scope: "col", class: "wide-only" }, "Difference"),
              ),
            ),
            h(
              "tbody",
              null,
              rows.map((r) =>
                h(
                  "tr",
                  { class: r.group < 2 ? "differs" : "", "data-task": r.task, "data-group": r.group },
                  h("th", { scope: "row" }, h("code", null, r.task)),
                  cell(agentA.id, ma?.run_id, r.a),
                  cell(agentB.id, mb?.run_id, r.b),
                  h("td", { class: "wide-only" }, GROUP_LABEL[r.group]),
                ),
              ),
            ),
          ),
        ),
      );
    })
    .catch((error: unknown) => fill(out, errorBox(`Could not load the agents: ${String(error)}`)));
  return () => {
    closed = true;
  };
};
