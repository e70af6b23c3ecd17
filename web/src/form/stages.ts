// The stages of a run: an ordered list of task subsets with thresholds, one fieldset each.

import { h } from "../dom";
import { field, readControl, writeControl, type Control } from "./fields";
import type { Json, JsonObject } from "./paths";

type Source = "all" | "subset" | "tasks";

export class StageList {
  readonly element: HTMLFieldSetElement;
  private readonly rows: HTMLElement;

  constructor() {
    this.rows = h("div", { class: "stage-rows" });
    const add = h("button", { type: "button", class: "small" }, "Add a stage");
    add.addEventListener("click", () => {
      this.add({});
      this.renumber();
      this.rows.lastElementChild?.querySelector("select")?.focus();
    });
    this.element = h(
      "fieldset",
      { class: "group stages", "data-path": "stages" },
      h("legend", null, "Stages"),
      h("p", { class: "help" }, "Each stage runs only if the agent reached the previous stage's threshold."),
      this.rows,
      add,
    );
    this.add({});
    this.renumber();
  }

  private add(stage: JsonObject): void {
    const row = h("fieldset", { class: "stage" }, h("legend", null, "Stage"));
    const source = h(
      "select",
      { class: "stage-source", "aria-label": "Tasks of this stage" },
      h("option", { value: "all" }, "All tasks"),
      h("option", { value: "subset" }, "A named subset"),
      h("option", { value: "tasks" }, "These task ids"),
    );
    const sourceField = h("div", { class: "field" }, h("label", null, "Tasks"), source);
    const subset = field({
      path: "stages.N.subset",
      label: "Subset",
      kind: "text",
      list: "subset-options",
      placeholder: "mini-5",
    });
    const tasks = field({ path: "stages.N.tasks", label: "Task ids", kind: "list", placeholder: "task-1, task-2" });
    const sample = field({ path: "stages.N.sample", label: "Sample size", kind: "integer", placeholder: "all" });
    const threshold = field({ path: "stages.N.threshold", label: "Threshold (0–1)", kind: "number", placeholder: "0" });
    const remove = h("button", { type: "button", class: "small", "data-action": "remove-stage" }, "Remove");
    remove.addEventListener("click", () => {
      row.remove();
      this.renumber();
    });
    const show = (): void => {
      subset.hidden = source.value !== "subset";
      tasks.hidden = source.value !== "tasks";
    };
    source.addEventListener("change", show);
    row.append(h("div", { class: "field-row" }, sourceField, subset, tasks, sample, threshold), remove);
    this.rows.append(row);
    // Keys the form has no control for still go to the service (which refuses unknown ones).
    const { subset: _s, tasks: _t, sample: _n, threshold: _h, ...rest } = stage;
    if (Object.keys(rest).length) row.dataset.extra = JSON.stringify(rest);
    const initial: Source = stage.tasks !== undefined ? "tasks" : stage.subset !== undefined ? "subset" : "all";
    source.value = initial;
    for (const key of ["subset", "tasks", "sample", "threshold"] as const) {
      const control = row.querySelector<Control>(`[data-path="stages.N.${key}"]`);
      if (control) writeControl(control, stage[key]);
    }
    show();
  }

  /** Give every control its real path (stages.0.subset, ...) after rows were added or removed. */
  private renumber(): void {
    const rows = [...this.rows.children] as HTMLFieldSetElement[];
    rows.forEach((row, index) => {
      row.dataset.path = `stages.${index}`;
      const legend = row.querySelector("legend");
      if (legend) legend.textContent = `Stage ${index + 1}`;
      row.querySelectorAll<Control>("[data-stage-key], [data-path^='stages.']").forEach((control) => {
        const key = control.dataset.stageKey ?? control.dataset.path?.split(".").pop() ?? "";
        control.dataset.stageKey = key;
        control.dataset.path = `stages.${index}.${key}`;
        control.id = `field-stages-${index}-${key}`;
        control.name = control.dataset.path;
        control.closest(".field")?.querySelector("label")?.setAttribute("for", control.id);
      });
      const source = row.querySelector<HTMLSelectElement>(".stage-source");
      if (source) {
        source.id = `field-stages-${index}-source`;
        source.closest(".field")?.querySelector("label")?.setAttribute("for", source.id);
      }
      const remove = row.querySelector<HTMLButtonElement>("[data-action='remove-stage']");
      if (remove) {
        remove.disabled = rows.length === 1;
        remove.setAttribute("aria-label", `Remove stage ${index + 1}`);
      }
    });
  }

  read(): Json[] {
    return ([...this.rows.children] as HTMLElement[]).map((row) => {
      const source = row.querySelector<HTMLSelectElement>(".stage-source")?.value as Source;
      const stage: JsonObject = row.dataset.extra ? (JSON.parse(row.dataset.extra) as JsonObject) : {};
      for (const control of row.querySelectorAll<Control>("[data-stage-key]")) {
        const key = control.dataset.stageKey ?? "";
        if ((key === "subset" && source !== "subset") || (key === "tasks" && source !== "tasks")) continue;
        const value = readControl(control);
        if (value !== undefined) stage[key] = value;
      }
      return stage;
    });
  }

  write(stages: Json | undefined): void {
    this.rows.replaceChildren();
    const list = Array.isArray(stages) && stages.length ? stages : [{}];
    for (const stage of list) {
      this.add(stage && typeof stage === "object" && !Array.isArray(stage) ? (stage as JsonObject) : {});
    }
    this.renumber();
  }
}
