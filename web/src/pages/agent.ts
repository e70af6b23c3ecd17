// An agent: metadata, parent and children, scores per stage, per-task results, the diff
// against its parent, the diagnosis that produced it, its LLM usage, and its exports.

import { api, ApiError, download } from "../api/client";
import type { AgentDetail, AgentInRun, LineageNode } from "../api/types";
import { renderDiff } from "../agent/diff";
import { resultsTable } from "../agent/results";
import { transferTable } from "../agent/transfer";
import { errorBox, fill, h, section } from "../dom";
import * as fmt from "../format";
import { navigate, type Page } from "../router";
import { selectionEstimate } from "../intervals";
import { META_TEXT, searchFacts } from "../tree/facts";
import { badge, scoreChip } from "../widgets";

function agentLink(id: string, runId: string | null, node?: LineageNode): HTMLElement {
  const href = runId ? `/agents/${id}?run=${runId}` : `/agents/${id}`;
  return h(
    "span",
    { class: "agent-link" },
    h("a", { href }, h("code", null, fmt.shortId(id, 12))),
    node ? [" ", badge(node.status), " ", scoreChip(node.score)] : null,
  );
}

function facts(agent: AgentDetail, runId: string | null, nodes: Map<string, LineageNode>): HTMLElement {
  const manifest = agent.manifest as Record<string, unknown>;
  const shown = ["solve", "test", "check", "requirements", "error"].filter(
    (k) => manifest[k] !== undefined && manifest[k] !== null && manifest[k] !== "",
  );
  return h(
    "dl",
    { class: "facts" },
    h("dt", null, "Id"),
    h("dd", null, h("code", { class: "full-id" }, agent.id)),
    h("dt", null, "Kind"),
    h("dd", null, agent.kind, agent.name ? ` · ${agent.name}` : ""),
    h("dt", null, "Parent"),
    h(
      "dd",
      { "data-role": "parent" },
      agent.parent_id ? agentLink(agent.parent_id, runId, nodes.get(agent.parent_id)) : "none (a seed)",
    ),
    h("dt", null, "Children"),
    h(
      "dd",
      { "data-role": "children" },
      agent.children.length
        ? h(
            "ul",
            { class: "inline-list" },
            agent.children.map((c) => h("li", null, agentLink(c, runId, nodes.get(c)))),
          )
        : "none yet",
    ),
    h("dt", null, "Lineage"),
    h(
      "dd",
      null,
      h(
        "ol",
        { class: "breadcrumb", "aria-label": "Lineage from the seed" },
        agent.lineage.map((id) =>
          h(
            "li",
            null,
            id === agent.id
              ? h("code", { "aria-current": "page" }, fmt.shortId(id, 8))
              : h(
                  "a",
                  { href: runId ? `/agents/${id}?run=${runId}` : `/agents/${id}` },
                  h("code", null, fmt.shortId(id, 8)),
                ),
          ),
        ),
      ),
    ),
    h("dt", null, "Created"),
    h("dd", null, fmt.dateTime(agent.created_at)),
    shown.map((k) => [
      h("dt", null, k),
      h("dd", null, h("code", null, typeof manifest[k] === "string" ? manifest[k] : JSON.stringify(manifest[k]))),
    ]),
  );
}

function stagesTable(member: AgentInRun): HTMLElement {
  if (!member.stages.length) return h("p", { class: "muted" }, "No stage finished yet.");
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "compact stages-table" },
      h("caption", { class: "visually-hidden" }, "Scores per stage"),
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          ["Stage", "Resolved", "Threshold", "Passed"].map((t) => h("th", { scope: "col" }, t)),
        ),
      ),
      h(
        "tbody",
        null,
        member.stages.map((s) =>
          h(
            "tr",
            null,
            h("th", { scope: "row" }, String(s.stage + 1)),
            h("td", null, `${s.resolved} / ${s.total} (${fmt.percent(s.resolved / Math.max(1, s.total))})`),
            h("td", null, fmt.percent(s.threshold)),
            h("td", null, s.passed ? "yes" : "no", s.stop ? ` (${s.stop.replaceAll("_", " ")})` : ""),
          ),
        ),
      ),
    ),
  );
}

function membership(member: AgentInRun, node: LineageNode | undefined, runId: string): HTMLElement {
  const search = node ? searchFacts(node).filter(([key]) => key !== "Crossover with") : [];
  const selection = node ? selectionEstimate(node) : null;
  const link = (other: string): HTMLElement =>
    h("a", { href: `/agents/${other}?run=${runId}` }, h("code", null, fmt.shortId(other, 12)));
  return h(
    "div",
    { class: "membership" },
    h(
      "dl",
      { class: "facts" },
      h("dt", null, "Status"),
      h("dd", null, badge(member.status)),
      member.reason ? [h("dt", null, "Reason"), h("dd", { class: "reason" }, member.reason)] : null,
      h("dt", null, "Score"),
      h("dd", { "data-role": "score" }, scoreChip(member.score), selection ? ` ${fmt.interval(selection)}` : ""),
      search.map(([key, value]) => [h("dt", null, key), h("dd", { "data-role": key.toLowerCase() }, value)]),
      node?.second_parent_id
        ? [
            h("dt", null, "Second parent"),
            h("dd", { "data-role": "second-parent" }, link(node.second_parent_id), " (crossover)"),
          ]
        : null,
      node?.same_as
        ? [
            h("dt", null, "Reuse"),
            h("dd", { "data-role": "same-as" }, "same code as ", link(node.same_as), ", results reused"),
          ]
        : null,
      node?.meta_changed ? [h("dt", null, "Hyperagent"), h("dd", { "data-role": "meta-changed" }, META_TEXT)] : null,
      h("dt", null, "LLM usage"),
      h("dd", null, `${fmt.usd(member.usd)} · ${fmt.tokens(member.tokens)} tokens`),
    ),
    h("h3", null, "Scores per stage"),
    stagesTable(member),
    h("h3", null, "Diagnosis that produced it"),
    member.diagnosis
      ? h("blockquote", { class: "diagnosis" }, member.diagnosis)
      : h("p", { class: "muted" }, "None recorded (a seed, or a step without a diagnosis)."),
  );
}

function exportsPanel(agent: AgentDetail, runId: string | null): HTMLElement {
  const short = fmt.shortId(agent.id, 12);
  const items: [string, string, string][] = [
    ["Code and metadata (tar.gz)", `/api/agents/${agent.id}/export`, `agent-${short}.tar.gz`],
    ["Patch series", `/api/agents/${agent.id}/patches`, `agent-${short}.patch`],
    ["Git bundle", `/api/agents/${agent.id}/bundle`, `agent-${short}.bundle`],
    ["Code only (tar.gz)", `/api/agents/${agent.id}/code`, `agent-${short}-code.tar.gz`],
  ];
  if (runId)
    items.push([
      "SWE-bench predictions (JSONL)",
      `/api/runs/${runId}/predictions?agent=${agent.id}`,
      `predictions-${short}.jsonl`,
    ]);
  const status = h("p", { role: "status", class: "muted" });
  return h(
    "div",
    null,
    h(
      "div",
      { class: "buttons" },
      items.map(([label, path, name]) => {
        const button = h("button", { type: "button", "data-export": path }, label);
        button.addEventListener("click", () => {
          status.textContent = `Preparing ${label}…`;
          download(path, name)
            .then(() => (status.textContent = `${label}: downloaded.`))
            .catch(
              (error: unknown) => (status.textContent = error instanceof ApiError ? error.message : String(error)),
            );
        });
        return button;
      }),
    ),
    status,
  );
}

function comparePanel(agent: AgentDetail, runId: string | null): HTMLElement {
  const run = runId ? `&run=${runId}` : "";
  const input = h("input", {
    id: "compare-with",
    type: "text",
    placeholder: "another agent's id",
    autocomplete: "off",
    spellcheck: "false",
  });
  const form = h(
    "form",
    { class: "inline-form" },
    h("label", { for: "compare-with" }, "Compare with"),
    input,
    h("button", { type: "submit" }, "Compare"),
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (input.value.trim()) navigate(`/compare?a=${agent.id}&b=${encodeURIComponent(input.value.trim())}${run}`);
  });
  return h(
    "div",
    null,
    agent.parent_id
      ? h(
          "p",
          null,
          h(
            "a",
            { href: `/compare?a=${agent.parent_id}&b=${agent.id}${run}`, "data-role": "compare-parent" },
            "Compare with its parent",
          ),
        )
      : null,
    form,
  );
}

export const agentPage: Page = (main, route) => {
  const id = route.params.id ?? "";
  document.title = `Agent ${fmt.shortId(id)} · Clade`;
  const title = h("h1", null, "Agent ", h("code", null, fmt.shortId(id, 12)));
  const body = h("div", { class: "agent-body" }, h("p", { class: "muted" }, "Loading…"));
  main.append(title, body);
  let closed = false;
  (async () => {
    const agent = await api("get", "/api/agents/{agent_id}", { path: { agent_id: id } });
    const wanted = route.query.get("run");
    const member = agent.runs.find((r) => r.run_id === wanted) ?? agent.runs[0] ?? null;
    const runId = member?.run_id ?? null;
    const [diff, transfer, lineage] = await Promise.all([
      api("get", "/api/agents/{agent_id}/diff", { path: { agent_id: id } }),
      api("get", "/api/agents/{agent_id}/transfer", { path: { agent_id: id } }),
      runId
        ? api("get", "/api/runs/{run_id}/lineage", { path: { run_id: runId } })
        : Promise.resolve({ run_id: "", nodes: [] }),
    ]);
    if (closed) return;
    const nodes = new Map(lineage.nodes.map((n) => [n.id, n]));
    fill(
      title,
      "Agent ",
      h("code", null, fmt.shortId(id, 12)),
      " ",
      badge(agent.kind),
      member ? [" ", badge(member.status)] : null,
    );
    const runPicker =
      agent.runs.length > 1
        ? h(
            "nav",
            { class: "run-picker", "aria-label": "Runs this agent is in" },
            "In run: ",
            agent.runs.map((r) =>
              r.run_id === runId
                ? h("strong", { "aria-current": "true" }, r.run_id)
                : h("a", { href: `/agents/${id}?run=${r.run_id}` }, r.run_id),
            ),
          )
        : null;
    fill(
      body,
      h(
        "div",
        { class: "agent-top" },
        section("About", facts(agent, runId, nodes)),
        member
          ? section(
              "In run",
              runPicker,
              h("p", null, h("a", { href: `/runs/${member.run_id}` }, `Run ${member.run_id}`)),
              membership(member, nodes.get(id), member.run_id),
            )
          : section("In run", h("p", { class: "muted" }, "This agent is in no run yet.")),
      ),
      member
        ? h(
            "section",
            { class: "panel", id: "results" },
            h("h2", null, "Results per task"),
            resultsTable(agent.id, member.evaluations, window.location.hash.slice(1) || null),
          )
        : null,
      section("On other models", transferTable(transfer.rows)),
      section(
        agent.parent_id ? "Change against its parent" : "Code (a seed: everything is new)",
        renderDiff(diff, `Diff of ${fmt.shortId(id)} against its parent`),
      ),
      h(
        "div",
        { class: "agent-bottom" },
        section("Export", exportsPanel(agent, runId)),
        section("Compare", comparePanel(agent, runId)),
      ),
    );
  })().catch((error: unknown) => {
    const missing = error instanceof ApiError && error.status === 404;
    body.replaceChildren(
      errorBox(missing ? `There is no agent ${id}.` : `Could not load agent ${id}: ${String(error)}`),
    );
  });
  return () => {
    closed = true;
  };
};
