// The hover card of a tree node: id, status, score, children, step, and a rejection's reason.

import type { LineageNode } from "../api/types";
import { fill, h } from "../dom";
import * as fmt from "../format";

export class Tooltip {
  readonly element: HTMLElement;

  constructor(parent: HTMLElement) {
    this.element = h("div", { class: "tree-tooltip", role: "tooltip", id: "tree-tooltip", hidden: true });
    parent.append(this.element);
  }

  show(node: LineageNode, x: number, y: number, best: boolean): void {
    const rows: [string, string][] = [
      ["Status", node.status],
      ["Score", fmt.score(node.score)],
      ["Children", fmt.integer(node.children)],
      ["Step", node.step === null ? "—" : String(node.step)],
      ["Stage reached", String(node.stage_reached + 1)],
    ];
    fill(
      this.element,
      h("strong", null, fmt.shortId(node.id, 12), best ? " · best" : ""),
      h(
        "dl",
        null,
        rows.map(([k, v]) => [h("dt", null, k), h("dd", null, v)]),
      ),
      node.reason ? h("p", { class: "reason" }, node.reason) : null,
      h("p", { class: "hint" }, "Click to open"),
    );
    this.element.hidden = false;
    const parent = this.element.parentElement?.getBoundingClientRect();
    const width = this.element.offsetWidth;
    const left = parent && x + 16 + width > parent.width ? x - 16 - width : x + 16;
    this.element.style.left = `${Math.max(4, left)}px`;
    this.element.style.top = `${Math.max(4, y + 12)}px`;
  }

  hide(): void {
    this.element.hidden = true;
  }
}
