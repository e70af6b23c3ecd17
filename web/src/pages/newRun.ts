// Start a run: fields for the configuration, or YAML/JSON text that fills them. The service
// validates; its 422 issues are shown at the fields their `loc` names.

import { api, ApiError } from "../api/client";
import { announce, h } from "../dom";
import {
  BENCHMARK,
  BUDGET,
  field,
  GENERAL,
  LIMITS,
  MODELS,
  readControl,
  SELECTION,
  writeControl,
  type Control,
  type FieldSpec,
} from "../form/fields";
import { clearIssues, showIssues } from "../form/issues";
import { deletePath, getPath, merge, setPath, type JsonObject } from "../form/paths";
import { StageList } from "../form/stages";
import { navigate, type Page } from "../router";

const STRATEGIES = ["score_child_prop", "score_prop", "best", "random", "hgm"];

function group(title: string, specs: FieldSpec[], path?: string): HTMLFieldSetElement {
  return h(
    "fieldset",
    { class: "group", "data-path": path },
    h("legend", null, title),
    h("div", { class: "field-grid" }, specs.map(field)),
  );
}

function datalist(id: string, options: [string, string][]): HTMLDataListElement {
  return h(
    "datalist",
    { id },
    options.map(([value, label]) => h("option", { value, label })),
  );
}

interface Benchmark {
  name: string;
  subsets: Record<string, number>;
}

function asBenchmarks(raw: unknown): Benchmark[] {
  if (!Array.isArray(raw)) return [];
  return raw.flatMap((b: unknown) => {
    const item = b as { name?: unknown; subsets?: unknown };
    return typeof item.name === "string"
      ? [{ name: item.name, subsets: (item.subsets ?? {}) as Record<string, number> }]
      : [];
  });
}

export const newRunPage: Page = (main, route) => {
  document.title = "Start a run · Clade";
  const stages = new StageList();
  let extras: JsonObject = {};
  const extrasNote = h("p", { class: "help", hidden: true });
  const textArea = h("textarea", {
    id: "config-text",
    "data-path": "__text",
    rows: 10,
    spellcheck: "false",
    placeholder: "name: my-run\nseed_agent: <id>\nbudget: {max_children: 20, max_usd: 5}",
  });
  const summary = h("div", { class: "error-summary", role: "alert", tabindex: -1, hidden: true });
  const status = h("p", { role: "status", class: "form-status" });
  const submit = h("button", { type: "submit", class: "primary" }, "Start the run");
  const form = h(
    "form",
    { class: "config-form", novalidate: true, "aria-labelledby": "new-run-title" },
    summary,
    h(
      "details",
      { class: "group config-text" },
      h("summary", null, "Paste a configuration (YAML or JSON)"),
      h(
        "div",
        { class: "field" },
        h("label", { for: "config-text" }, "Configuration text"),
        textArea,
        h("p", { class: "help" }, "“Fill the form” reads it into the fields below; unknown keys are sent as they are."),
      ),
      h(
        "div",
        { class: "buttons" },
        h("button", { type: "button", "data-action": "fill" }, "Fill the form"),
        h("button", { type: "button", "data-action": "show" }, "Show the form as JSON"),
      ),
    ),
    group("Run", GENERAL),
    group("Benchmark", BENCHMARK, "benchmark"),
    stages.element,
    group("Selection and improver", SELECTION),
    group("Models", MODELS, "models"),
    group("Budget", BUDGET, "budget"),
    h("details", { class: "group" }, h("summary", null, "Sandbox limits"), group("Limits", LIMITS, "limits")),
    extrasNote,
    h("div", { class: "buttons" }, submit),
    status,
    datalist(
      "strategy-options",
      STRATEGIES.map((s) => [s, s]),
    ),
    datalist("seed-options", []),
    datalist("benchmark-options", []),
    datalist("subset-options", []),
  );
  main.append(
    h("h1", { id: "new-run-title" }, "Start a run"),
    h("p", { class: "muted" }, "Empty fields take the service's defaults. Starting a run needs the admin token."),
    form,
  );

  const controls = (): Control[] =>
    [...form.querySelectorAll<Control>("[data-path][data-kind]")].filter((c) => !c.dataset.stageKey);

  const collect = (): JsonObject => {
    const config: JsonObject = {};
    for (const control of controls()) {
      const value = readControl(control);
      if (value !== undefined) setPath(config, control.dataset.path ?? "", value);
    }
    if (getPath(config, "improver.mode") === "self" && getPath(config, "improver.agent") === undefined) {
      deletePath(config, "improver.mode"); // the default; keeps the JSON short
    }
    config.stages = stages.read();
    return merge(extras, config);
  };

  const fill = (config: JsonObject): void => {
    const rest = structuredClone(config);
    for (const control of controls()) {
      const path = control.dataset.path ?? "";
      writeControl(control, getPath(config, path));
      if (control instanceof HTMLSelectElement && control.value === "") control.selectedIndex = 0;
      deletePath(rest, path);
    }
    stages.write(config.stages);
    delete rest.stages;
    delete rest.version;
    extras = rest;
    const keys = Object.keys(extras);
    extrasNote.hidden = keys.length === 0;
    extrasNote.textContent = keys.length ? `Also sent, without a field here: ${keys.join(", ")}.` : "";
  };

  form.querySelector("[data-action='fill']")?.addEventListener("click", () => {
    clearIssues(form);
    api("post", "/api/dashboard/parse-config", { body: { text: textArea.value }, admin: true })
      .then(({ config }) => {
        fill(config as JsonObject);
        status.textContent = "The form now holds the pasted configuration.";
        announce(status.textContent);
      })
      .catch((error: unknown) => {
        if (error instanceof ApiError && error.issues.length)
          showIssues(form, error.issues, (p) => (p[0] === "text" ? ["__text"] : p));
        else status.textContent = String(error);
      });
  });
  form.querySelector("[data-action='show']")?.addEventListener("click", () => {
    textArea.value = JSON.stringify(collect(), null, 2);
  });

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    clearIssues(form);
    submit.disabled = true;
    status.textContent = "Starting…";
    api("post", "/api/runs", { body: collect() as never, admin: true })
      .then((run) => {
        announce(`Run ${run.name} started`);
        navigate(`/runs/${run.id}`);
      })
      .catch((error: unknown) => {
        status.textContent = "";
        if (error instanceof ApiError && error.issues.length) {
          const placed = showIssues(form, error.issues);
          status.textContent = `${error.issues.length} value(s) refused, ${placed} shown at their field.`;
        } else {
          status.textContent = error instanceof ApiError ? `Refused: ${error.message}` : String(error);
        }
      })
      .finally(() => (submit.disabled = false));
  });

  // Suggestions: seeds for the seed field, benchmarks and their subsets.
  const seed = route.query.get("seed");
  api("get", "/api/agents", { query: { kind: "seed", limit: 200 } })
    .then((page) => {
      form
        .querySelector("#seed-options")
        ?.replaceChildren(...page.items.map((a) => h("option", { value: a.id, label: a.name ?? a.id.slice(0, 12) })));
      const control = form.querySelector<HTMLInputElement>("[data-path='seed_agent']");
      const first = page.items[0];
      if (control && !control.value) control.value = seed ?? (page.items.length === 1 && first ? first.id : "");
    })
    .catch(() => undefined);
  api("get", "/api/benchmarks")
    .then((raw) => {
      const benchmarks = asBenchmarks(raw);
      form
        .querySelector("#benchmark-options")
        ?.replaceChildren(...benchmarks.map((b) => h("option", { value: b.name })));
      const subsets = [...new Set(benchmarks.flatMap((b) => Object.keys(b.subsets)))];
      form.querySelector("#subset-options")?.replaceChildren(...subsets.map((s) => h("option", { value: s })));
    })
    .catch(() => undefined);
};
