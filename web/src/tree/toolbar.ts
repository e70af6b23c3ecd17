// The tree's controls: tree or list view, search by id, layout, colour, zoom; and its legend.

import { range } from "d3";
import { BEST_PATH, CROSSOVER, META_CHANGED, scoreColor } from "../colors";
import { fill, h } from "../dom";
import * as fmt from "../format";
import { COLOR_BY, type ColorBy, type Colouring } from "./colouring";
import type { LayoutKind } from "./layout";
import type { TreeList } from "./list";
import { findIds, type TreeModel } from "./model";

const model0 = (): Pick<TreeModel, "nodes"> => ({ nodes: [] });
import type { TreeView } from "./view";

export interface ToolbarEvents {
  search: (query: string) => void;
  layout: (kind: LayoutKind) => void;
  fit: () => void;
  zoom: (factor: number) => void;
  view: (which: "tree" | "list") => void;
  colorBy: (by: ColorBy) => void;
}

function toggleGroup<T extends string>(
  label: string,
  options: [T, string][],
  pick: (value: T) => void,
): { element: HTMLElement; set(value: T): void } {
  const buttons = options.map(([value, text]) => {
    const button = h("button", { type: "button", "data-value": value, "aria-pressed": "false" }, text);
    button.addEventListener("click", () => {
      set(value);
      pick(value);
    });
    return button;
  });
  const set = (value: T): void =>
    buttons.forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.value === value)));
  return { element: h("div", { class: "toggle-group", role: "group", "aria-label": label }, buttons), set };
}

export class TreeToolbar {
  readonly element: HTMLElement;
  readonly legend: HTMLElement;
  private readonly colourKey: HTMLElement;
  private readonly extraKeys: HTMLElement[];
  private readonly colorSelect: HTMLSelectElement;
  private readonly layoutToggle: { element: HTMLElement; set(value: LayoutKind): void };
  private readonly status: HTMLElement;
  private matches: string[] = [];
  private index = 0;
  private lastQuery = "";

  constructor(events: ToolbarEvents) {
    const viewToggle = toggleGroup<"tree" | "list">(
      "View",
      [
        ["tree", "Tree"],
        ["list", "List"],
      ],
      events.view,
    );
    viewToggle.set("tree");
    this.layoutToggle = toggleGroup<LayoutKind>(
      "Layout",
      [
        ["tidy", "Tidy"],
        ["radial", "Radial"],
      ],
      events.layout,
    );
    const search = h("input", {
      id: "tree-search",
      type: "search",
      placeholder: "id prefix, e.g. 4af022",
      autocomplete: "off",
      spellcheck: "false",
      "aria-describedby": "tree-search-status",
    });
    this.status = h("span", { id: "tree-search-status", class: "muted", role: "status" });
    search.addEventListener("input", () => events.search(search.value));
    search.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        events.search(search.value);
      }
    });
    const button = (text: string, label: string, action: () => void): HTMLButtonElement => {
      const b = h("button", { type: "button", "aria-label": label, title: label }, text);
      b.addEventListener("click", action);
      return b;
    };
    this.colorSelect = h(
      "select",
      { id: "tree-color" },
      COLOR_BY.map(([value, text]) => h("option", { value }, text)),
    );
    this.colorSelect.addEventListener("change", () => events.colorBy(this.colorSelect.value as ColorBy));
    this.element = h(
      "div",
      { class: "tree-toolbar" },
      viewToggle.element,
      h("div", { class: "search" }, h("label", { for: "tree-search" }, "Find agent"), search, this.status),
      this.layoutToggle.element,
      h("div", { class: "color-by" }, h("label", { for: "tree-color" }, "Colour by"), this.colorSelect),
      h(
        "div",
        { class: "toggle-group", role: "group", "aria-label": "Zoom" },
        button("+", "Zoom in", () => events.zoom(1.5)),
        button("−", "Zoom out", () => events.zoom(1 / 1.5)),
        button("Fit", "Fit the whole tree", events.fit),
      ),
    );
    this.colourKey = h("li", { class: "colour-key" });
    this.extraKeys = [
      h(
        "li",
        { "data-key": "crossover", hidden: true },
        h("span", { class: "key-line crossover", style: `border-color:${CROSSOVER}`, "aria-hidden": "true" }),
        "crossover: second parent",
      ),
      h(
        "li",
        { "data-key": "meta-changed", hidden: true },
        h("span", { class: "key meta-ring", style: `outline-color:${META_CHANGED}`, "aria-hidden": "true" }),
        "changed its improvement procedure",
      ),
      h(
        "li",
        { "data-key": "same-as", hidden: true },
        h("span", { class: "key same-dot", "aria-hidden": "true" }),
        "same code as an earlier agent (results reused)",
      ),
    ];
    this.legend = h(
      "ul",
      { class: "tree-legend", "aria-label": "Legend" },
      this.colourKey,
      h(
        "li",
        null,
        h("span", { class: "key best-path", style: `border-color:${BEST_PATH}`, "aria-hidden": "true" }),
        "path to the best agent",
      ),
      h("li", null, h("span", { class: "key rejected", "aria-hidden": "true" }), "rejected (hover for the reason)"),
      h("li", null, h("span", { class: "key evaluating", "aria-hidden": "true" }), "being evaluated"),
      h("li", null, h("span", { class: "key size", "aria-hidden": "true" }), "larger: more children"),
      this.extraKeys,
    );
    this.showColouring({ by: "score", fill: () => "", categories: [] }, model0());
  }

  setColorBy(by: ColorBy): void {
    this.colorSelect.value = by;
  }

  /** The legend's colour key for the current colouring, and keys for the marks in the tree. */
  showColouring(colouring: Colouring, model: Pick<TreeModel, "nodes">): void {
    if (colouring.by === "score") {
      const stops = range(0, 1.01, 0.1)
        .map((v) => `${scoreColor(v)} ${v * 100}%`)
        .join(", ");
      fill(
        this.colourKey,
        h("span", { class: "gradient", style: `background:linear-gradient(90deg, ${stops})`, "aria-hidden": "true" }),
        "score 0 → 1",
      );
    } else {
      fill(
        this.colourKey,
        h(
          "ul",
          { class: "categories", "aria-label": `Colour by ${colouring.by}` },
          colouring.categories.map((c) =>
            h(
              "li",
              { "data-category": c.label },
              h("span", { class: "key", style: `background:${c.color}`, "aria-hidden": "true" }),
              `${c.label} (${fmt.integer(c.count)})`,
            ),
          ),
        ),
      );
    }
    const present = {
      crossover: model.nodes.some((n) => n.second_parent_id),
      "meta-changed": model.nodes.some((n) => n.meta_changed),
      "same-as": model.nodes.some((n) => n.same_as),
    };
    for (const key of this.extraKeys) key.hidden = !present[key.dataset.key as keyof typeof present];
  }

  setLayout(kind: LayoutKind): void {
    this.layoutToggle.set(kind);
  }

  /** Highlight agents whose id starts with the query; Enter again steps to the next match. */
  showMatches(model: TreeModel, query: string, view: TreeView, list: TreeList): void {
    const matches = findIds(model, query);
    const same = query === this.lastQuery && matches.join() === this.matches.join();
    this.index = same && matches.length ? (this.index + 1) % matches.length : 0;
    this.matches = matches;
    this.lastQuery = query;
    view.highlight(matches);
    const target = matches[this.index];
    if (query.trim().length < 3) this.status.textContent = query.trim() ? "type at least 3 characters" : "";
    else this.status.textContent = matches.length ? `${this.index + 1} of ${matches.length}` : "no agent";
    if (!target) return;
    if (!view.element.hidden) view.focus(target);
    else list.reveal(target);
  }
}
