// The run configuration's fields as form controls. Each control carries `data-path` (its
// place in the configuration), so values are collected and errors placed by that path.
// Empty controls are left out of the configuration: the service's defaults apply.

import { h } from "../dom";
import type { Json } from "./paths";

export type Kind = "text" | "number" | "integer" | "select" | "json" | "params" | "list";

export interface FieldSpec {
  path: string;
  label: string;
  kind: Kind;
  placeholder?: string;
  help?: string;
  options?: readonly string[];
  list?: string; // id of a <datalist> with suggestions
}

export type Control = HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement;

const idOf = (path: string): string => `field-${path.replace(/\./g, "-")}`;

export function field(spec: FieldSpec): HTMLElement {
  const id = idOf(spec.path);
  const common = { id, name: spec.path, "data-path": spec.path, "data-kind": spec.kind };
  let control: Control;
  if (spec.kind === "select") {
    control = h(
      "select",
      common,
      (spec.options ?? []).map((o) => h("option", { value: o }, o)),
    );
  } else if (spec.kind === "json" || spec.kind === "list") {
    control = h("textarea", { ...common, rows: 2, spellcheck: "false", placeholder: spec.placeholder });
  } else {
    const numeric = spec.kind === "number" || spec.kind === "integer";
    control = h("input", {
      ...common,
      type: "text",
      inputmode: numeric ? (spec.kind === "integer" ? "numeric" : "decimal") : undefined,
      placeholder: spec.placeholder,
      list: spec.list,
      autocomplete: "off",
      spellcheck: "false",
    });
  }
  const help = spec.help ? h("p", { class: "help", id: `${id}-help` }, spec.help) : null;
  if (help) control.setAttribute("aria-describedby", help.id);
  return h("div", { class: "field" }, h("label", { for: id }, spec.label), control, help);
}

/** The control's value as configuration JSON, or undefined when it is empty. */
export function readControl(control: Control): Json | undefined {
  const text = control.value.trim();
  if (text === "") return undefined;
  switch (control.dataset.kind as Kind) {
    case "number":
    case "integer": {
      const value = Number(text);
      return Number.isFinite(value) ? value : text; // the service says what is wrong with it
    }
    case "json":
      try {
        return JSON.parse(text) as Json;
      } catch {
        return text;
      }
    case "params":
      return parseParams(text);
    case "list":
      return text.split(/[\s,]+/).filter(Boolean);
    default:
      return text;
  }
}

/** A value as a control shows it: strings as they are, anything else as JSON. */
function jsonText(value: Json | undefined): string {
  return typeof value === "string" ? value : JSON.stringify(value ?? null);
}

export function writeControl(control: Control, value: Json | undefined): void {
  if (value === undefined || value === null) control.value = "";
  else if (control.dataset.kind === "params" && typeof value === "object" && !Array.isArray(value)) {
    control.value = Object.entries(value)
      .map(([k, v]) => `${k}=${jsonText(v)}`)
      .join(", ");
  } else if (Array.isArray(value) && control.dataset.kind === "list") control.value = value.map(jsonText).join(", ");
  else if (typeof value === "object") control.value = JSON.stringify(value);
  else control.value = String(value);
}

/** "lambda=10, m=0.5" -> {lambda: 10, m: 0.5}; a value that is not a number is sent as typed. */
export function parseParams(text: string): Json {
  const out: Record<string, Json> = {};
  for (const part of text.split(/[,\n]+/)) {
    const [key, ...rest] = part.split("=");
    const name = key?.trim();
    if (!name) continue;
    const raw = rest.join("=").trim();
    const number = Number(raw);
    out[name] = raw !== "" && Number.isFinite(number) ? number : raw;
  }
  return out;
}

export const GENERAL: FieldSpec[] = [
  { path: "name", label: "Name", kind: "text", placeholder: "run" },
  {
    path: "seed_agent",
    label: "Seed agent",
    kind: "text",
    list: "seed-options",
    placeholder: "40-character agent id",
    help: "An archived agent's id (import one with `clade seed import`).",
  },
  { path: "parallelism", label: "Parallel steps", kind: "integer", placeholder: "2" },
  { path: "rng_seed", label: "RNG seed", kind: "integer", placeholder: "0" },
];

export const BENCHMARK: FieldSpec[] = [
  { path: "benchmark.name", label: "Benchmark", kind: "text", list: "benchmark-options", placeholder: "clade-mini" },
  {
    path: "benchmark.options",
    label: "Benchmark options (JSON)",
    kind: "json",
    placeholder: '{"path": "tasks.jsonl"}',
  },
];

export const SELECTION: FieldSpec[] = [
  {
    path: "selection.strategy",
    label: "Selection strategy",
    kind: "text",
    list: "strategy-options",
    placeholder: "score_child_prop",
  },
  { path: "selection.params", label: "Strategy parameters", kind: "params", placeholder: "lambda=10, m=0.5" },
  { path: "improver.mode", label: "Improver", kind: "select", options: ["self", "fixed", "hyper"] },
  {
    path: "improver.agent",
    label: "Fixed improver agent",
    kind: "text",
    placeholder: "only with improver 'fixed'",
  },
];

export const MODELS: FieldSpec[] = [
  { path: "models.improve", label: "Improve model", kind: "text", placeholder: "scripted" },
  { path: "models.diagnose", label: "Diagnose model", kind: "text", placeholder: "scripted" },
  { path: "models.solve", label: "Solve model", kind: "text", placeholder: "scripted" },
];

export const BUDGET: FieldSpec[] = [
  { path: "budget.max_children", label: "Max children", kind: "integer", placeholder: "10" },
  { path: "budget.max_usd", label: "Max USD", kind: "number", placeholder: "no limit" },
  { path: "budget.max_tokens", label: "Max tokens", kind: "integer", placeholder: "no limit" },
  { path: "budget.max_wall_time_s", label: "Max wall time (s)", kind: "number", placeholder: "no limit" },
  { path: "budget.per_evaluation_usd", label: "USD per evaluation", kind: "number", placeholder: "no limit" },
  { path: "budget.per_evaluation_tokens", label: "Tokens per evaluation", kind: "integer", placeholder: "no limit" },
  { path: "budget.max_reply_tokens", label: "Tokens per reply", kind: "integer", placeholder: "the agent's own" },
  { path: "budget.max_upstream_failures", label: "Stop after upstream failures", kind: "integer", placeholder: "5" },
];

export const LIMITS: FieldSpec[] = [
  { path: "limits.solve_timeout_s", label: "Solve timeout (s)", kind: "integer", placeholder: "300" },
  { path: "limits.improve_timeout_s", label: "Improve timeout (s)", kind: "integer", placeholder: "600" },
  { path: "limits.test_timeout_s", label: "Test timeout (s)", kind: "integer", placeholder: "300" },
  { path: "limits.memory_mb", label: "Memory (MB)", kind: "integer", placeholder: "2048" },
  { path: "limits.cpus", label: "CPUs", kind: "number", placeholder: "1" },
  { path: "limits.pids", label: "Processes", kind: "integer", placeholder: "256" },
  { path: "limits.max_agent_steps", label: "Agent steps", kind: "integer", placeholder: "30" },
  { path: "limits.overhead_s", label: "Overhead (s)", kind: "integer", placeholder: "120" },
];
