// The lineage as an ARIA tree: one focusable row per visible agent (roving tabindex).
// Up/Down move, Right opens or goes to the first child, Left closes or goes to the parent,
// Home/End jump, Enter opens the agent's page, * opens every sibling.

import { h } from "../dom";
import * as fmt from "../format";
import { scoreText } from "./facts";
import type { TreeModel, TreeNode } from "./model";

const EXPAND_ALL_UP_TO = 500;

export class TreeList {
  readonly element: HTMLElement;
  private model: TreeModel | null = null;
  private expanded = new Set<string>();
  private rows: TreeNode[] = [];
  private current: string | null = null;

  constructor(
    label: string,
    private readonly open: (id: string) => void,
  ) {
    this.element = h("div", { class: "tree-list", role: "tree", "aria-label": label });
    this.element.addEventListener("keydown", (event) => this.onKey(event));
    this.element.addEventListener("click", (event) => {
      const row = (event.target as Element).closest<HTMLElement>("[role=treeitem]");
      if (!row?.dataset.id) return;
      if ((event.target as Element).closest(".toggle")) this.toggle(row.dataset.id);
      else this.open(row.dataset.id);
    });
  }

  /** Show a model; the first time, open everything (small trees) or the path to the best. */
  render(model: TreeModel): void {
    const first = this.model === null;
    this.model = model;
    if (first) {
      if (model.count <= EXPAND_ALL_UP_TO) model.root.each((n) => n.data.node && this.expanded.add(n.data.node.id));
      else for (const id of model.bestPath) this.expanded.add(id);
      const top = model.root.data.node ? model.root : model.root.children?.[0];
      this.current = top?.data.node?.id ?? null;
    }
    this.draw();
  }

  private visibleRows(): TreeNode[] {
    const out: TreeNode[] = [];
    const visit = (n: TreeNode): void => {
      if (n.data.node) out.push(n);
      if (!n.data.node || this.expanded.has(n.data.node.id)) n.children?.forEach(visit);
    };
    if (this.model) visit(this.model.root);
    return out;
  }

  private draw(): void {
    const hadFocus = this.element.contains(document.activeElement);
    this.rows = this.visibleRows();
    if (!this.rows.some((n) => n.data.node?.id === this.current)) this.current = this.rows[0]?.data.node?.id ?? null;
    const offset = this.model?.root.data.node ? 1 : 0; // a virtual root is not a level
    this.element.replaceChildren(...this.rows.map((n) => this.row(n, offset)));
    if (hadFocus) this.focusCurrent();
  }

  private row(n: TreeNode, offset: number): HTMLElement {
    const node = n.data.node;
    if (!node) throw new Error("virtual root has no row");
    const siblings = n.parent?.children ?? [n];
    const hasChildren = (n.children?.length ?? 0) > 0;
    const isOpen = this.expanded.has(node.id);
    const best = this.model?.best === node.id;
    const onPath = this.model?.bestPath.has(node.id) ?? false;
    const label = `${fmt.shortId(node.id, 12)}, ${node.status}, score ${scoreText(node)}, ${fmt.plural(node.children, "child", "children")}${best ? ", best agent" : ""}${node.reason ? `, ${node.reason}` : ""}`;
    return h(
      "div",
      {
        role: "treeitem",
        class: `tree-row status-${node.status}${onPath ? " on-best-path" : ""}`,
        "data-id": node.id,
        "aria-level": n.depth + offset,
        "aria-setsize": siblings.length,
        "aria-posinset": siblings.indexOf(n) + 1,
        "aria-expanded": hasChildren ? String(isOpen) : undefined,
        "aria-selected": String(node.id === this.current),
        "aria-label": label,
        tabindex: node.id === this.current ? 0 : -1,
        style: `--depth:${n.depth + offset - 1}`,
      },
      h("span", { class: "toggle", "aria-hidden": "true" }, hasChildren ? (isOpen ? "▾" : "▸") : "·"),
      h("code", { class: "row-id" }, fmt.shortId(node.id, 12)),
      h("span", { class: `badge status-${node.status}` }, node.status),
      h("span", { class: "row-score" }, scoreText(node)),
      h("span", { class: "row-children" }, fmt.plural(node.children, "child", "children")),
      best ? h("span", { class: "row-best" }, "best") : null,
      node.reason ? h("span", { class: "row-reason" }, node.reason) : null,
    );
  }

  private focusCurrent(): void {
    const row = this.current ? this.element.querySelector<HTMLElement>(`[data-id="${this.current}"]`) : null;
    row?.focus();
  }

  private moveTo(id: string | null | undefined): void {
    if (!id) return;
    const before = this.element.querySelector<HTMLElement>(`[data-id="${this.current}"]`);
    before?.setAttribute("tabindex", "-1");
    before?.setAttribute("aria-selected", "false");
    this.current = id;
    const row = this.element.querySelector<HTMLElement>(`[data-id="${id}"]`);
    row?.setAttribute("tabindex", "0");
    row?.setAttribute("aria-selected", "true");
    row?.focus();
    row?.scrollIntoView({ block: "nearest" });
  }

  private toggle(id: string, open = !this.expanded.has(id)): void {
    if (open) this.expanded.add(id);
    else this.expanded.delete(id);
    this.current = id;
    this.draw();
    this.focusCurrent();
  }

  /** Open the ancestors of an agent and focus its row (search). */
  reveal(id: string): void {
    const n = this.model?.byId.get(id);
    if (!n) return;
    for (let p = n.parent; p; p = p.parent) if (p.data.node) this.expanded.add(p.data.node.id);
    this.current = id;
    this.draw();
    this.focusCurrent();
  }

  private onKey(event: KeyboardEvent): void {
    const index = this.rows.findIndex((n) => n.data.node?.id === this.current);
    const n = this.rows[index];
    if (!n?.data.node) return;
    const id = n.data.node.id;
    const hasChildren = (n.children?.length ?? 0) > 0;
    switch (event.key) {
      case "ArrowDown":
        this.moveTo(this.rows[index + 1]?.data.node?.id);
        break;
      case "ArrowUp":
        this.moveTo(this.rows[index - 1]?.data.node?.id);
        break;
      case "ArrowRight":
        if (hasChildren && !this.expanded.has(id)) this.toggle(id, true);
        else if (hasChildren) this.moveTo(n.children?.[0]?.data.node?.id);
        break;
      case "ArrowLeft":
        if (hasChildren && this.expanded.has(id)) this.toggle(id, false);
        else this.moveTo(n.parent?.data.node?.id);
        break;
      case "Home":
        this.moveTo(this.rows[0]?.data.node?.id);
        break;
      case "End":
        this.moveTo(this.rows[this.rows.length - 1]?.data.node?.id);
        break;
      case "Enter":
        this.open(id);
        break;
      case "*":
        n.parent?.children?.forEach((s) => s.data.node && this.expanded.add(s.data.node.id));
        this.draw();
        this.focusCurrent();
        break;
      default:
        return;
    }
    event.preventDefault();
  }
}
