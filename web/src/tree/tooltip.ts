// The hover card of a tree node: id, status, score with its interval, held-out score, epoch,
// island / niche / group, children, step, crossover and reuse, and a rejection's reason.

import type { LineageNode } from "../api/types";
import { fill, h } from "../dom";
import * as fmt from "../format";
import { META_TEXT, reuseText, scoreText, searchFacts } from "./facts";

export class Tooltip {
  readonly element: HTMLElement;

  constructor(parent: HTMLElement) {
    this.element = h("div", { class: "tree-tooltip", role: "tooltip", id: "tree-tooltip", hidden: true });
    parent.append(this.element);
  }

  show(node: LineageNode, x: number, y: number, best: boolean): void {
    const rows: [string, string][] = [
      ["Status", node.status],
      ["Score", scoreText(node)],
      ...searchFacts(node),
      ["Children", fmt.integer(node.children)],
      ["Step", node.step === null ? "—" : String(node.step)],
      ["Stage reached", String(node.stage_reached + 1)],
    ];
    const reuse = reuseText(node);
    fill(
      this.element,
      h("strong", null, fmt.shortId(node.id, 12), best ? " · best" : ""),
      h(
        "dl",
        null,
        rows.map(([k, v]) => [h("dt", null, k), h("dd", null, v)]),
      ),
      reuse ? h("p", { class: "reuse" }, reuse) : null,
      node.meta_changed ? h("p", { class: "meta" }, META_TEXT) : null,
      node.reason ? h("p", { class: "reason" }, node.reason) : null,
      h("p", { class: "hint" }, "Click to open"),
    );
    this.element.hidden = false;
    const parent = this.element.parentElement?.getBoundingClientRect();
    const width = this.element.offsetWidth;
    const height = this.element.offsetHeight;
    const left = parent && x + 16 + width > parent.width ? x - 16 - width : x + 16;
    const top = parent && y + 12 + height > parent.height ? y - 12 - height : y + 12;
    this.element.style.left = `${Math.max(4, left)}px`;
    this.element.style.top = `${Math.max(4, top)}px`;
  }

  hide(): void {
    this.element.hidden = true;
  }
}
