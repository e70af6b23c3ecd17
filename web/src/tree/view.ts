// The lineage tree: colour by score (or island, niche, group, epoch), size by child count,
// rejected children faint, the path from the seed to the best agent highlighted, crossover
// children joined to their second parent; pan and zoom (d3-zoom), hover cards, click to open.
// Small trees are drawn in SVG, large ones on a canvas (see CANVAS_FROM). While the user has
// not moved the view since the last fit, a growing tree is re-fitted as agents arrive.

import { select, zoom, zoomIdentity, type Selection, type ZoomBehavior, type ZoomTransform } from "d3";
import { h } from "../dom";
import * as fmt from "../format";
import { CanvasSurface } from "./canvasSurface";
import { colouring, type ColorBy, type Colouring } from "./colouring";
import { place, type LayoutKind, type Placement } from "./layout";
import type { TreeModel } from "./model";
import type { Marks } from "./style";
import type { Surface } from "./surface";
import { SvgSurface } from "./svgSurface";
import { Tooltip } from "./tooltip";

export const CANVAS_FROM = 1000;
export type SurfaceKind = "svg" | "canvas" | "auto";

export interface TreeViewEvents {
  open(id: string): void;
}

export class TreeView {
  readonly element: HTMLElement;
  private readonly host: Selection<HTMLElement, unknown, null, undefined>;
  private readonly zoomer: ZoomBehavior<HTMLElement, unknown>;
  private readonly tooltip: Tooltip;
  private surface: Surface | null = null;
  private placement: Placement | null = null;
  private model: TreeModel | null = null;
  private transform: ZoomTransform = zoomIdentity;
  private matches = new Set<string>();
  private fresh = new Set<string>();
  private settleTimer = 0;
  private colorBy: ColorBy = "score";
  colouring: Colouring = colouring([], "score");
  /** Re-fit on every update until the user pans or zooms; "Fit" starts following again. */
  private following = true;

  constructor(
    private readonly events: TreeViewEvents,
    private readonly surfaceKind: SurfaceKind = "auto",
  ) {
    this.element = h("div", {
      class: "tree-canvas",
      "data-state": "loading",
      role: "img",
      "aria-label": "Lineage tree",
    });
    this.host = select(this.element);
    this.tooltip = new Tooltip(this.element);
    this.zoomer = zoom<HTMLElement, unknown>()
      .scaleExtent([0.01, 8])
      .on("zoom", (event: { transform: ZoomTransform; sourceEvent: Event | null }) => {
        // Only the user's own gestures carry a source event; fits and transitions do not.
        if (event.sourceEvent) this.follow(false);
        this.transform = event.transform;
        this.surface?.move(event.transform);
        this.element.dataset.zoom = event.transform.toString();
        this.tooltip.hide();
      })
      .on("end", () => {
        window.clearTimeout(this.settleTimer);
        this.settleTimer = window.setTimeout(() => this.surface?.settle(), 60);
      });
    this.host.call(this.zoomer).on("dblclick.zoom", null);
    this.follow(true);
    this.listen();
  }

  private follow(on: boolean): void {
    this.following = on;
    this.element.dataset.following = String(on);
  }

  private listen(): void {
    this.host.on("pointermove", (event: PointerEvent) => {
      const placed = this.surface?.nodeAt(event) ?? null;
      this.element.classList.toggle("over-node", placed !== null);
      if (!placed) {
        this.tooltip.hide();
        return;
      }
      const box = this.element.getBoundingClientRect();
      this.tooltip.show(placed.node, event.clientX - box.left, event.clientY - box.top, placed.id === this.model?.best);
    });
    this.host.on("pointerleave", () => this.tooltip.hide());
    this.host.on("click", (event: MouseEvent) => {
      const placed = this.surface?.nodeAt(event);
      if (placed) this.events.open(placed.id);
    });
  }

  private marks(): Marks {
    return {
      best: this.model?.best ?? null,
      bestPath: this.model?.bestPath ?? new Set(),
      matches: this.matches,
      fresh: this.fresh,
      fill: this.colouring.fill,
    };
  }

  /** Fill the nodes by another property; the legend reads `colouring`. */
  setColorBy(by: ColorBy): Colouring {
    this.colorBy = by;
    this.colouring = colouring(this.model?.nodes ?? [], by);
    this.element.dataset.colorBy = by;
    this.surface?.mark(this.marks());
    return this.colouring;
  }

  private ensureSurface(count: number): Surface {
    const want = this.surfaceKind === "auto" ? (count >= CANVAS_FROM ? "canvas" : "svg") : this.surfaceKind;
    if (this.surface && this.element.dataset.surface === want) return this.surface;
    this.surface?.destroy();
    this.surface = want === "canvas" ? new CanvasSurface(this.element) : new SvgSurface(this.element);
    this.element.dataset.surface = want;
    this.surface.move(this.transform);
    return this.surface;
  }

  /**
   * Draw (or redraw after a live update); `fit` frames the whole tree. A live update keeps
   * the user's view, or re-fits it while following (the user has not moved it since a fit).
   */
  render(model: TreeModel, kind: LayoutKind, fit: boolean, fresh: string[] = []): void {
    this.model = model;
    this.fresh = new Set(fresh);
    this.colouring = colouring(model.nodes, this.colorBy);
    this.element.dataset.colorBy = this.colorBy;
    this.placement = place(model, kind);
    performance.mark("clade:tree-placed");
    const surface = this.ensureSurface(model.count);
    surface.draw(this.placement, this.marks());
    this.element.setAttribute(
      "aria-label",
      `Lineage tree: ${fmt.plural(model.count, "agent")}; the list view reads it node by node`,
    );
    this.element.dataset.nodeCount = String(model.count);
    this.element.dataset.layout = kind;
    if (fit) this.fit(false);
    // At once, not animated: the view is final when the new agents are drawn.
    else if (this.following) this.fit(false);
    surface.settle();
    this.element.dataset.state = "ready";
  }

  /** Frame the whole tree in the visible area. */
  fit(animate = true): void {
    this.follow(true);
    if (!this.placement) return;
    const { x0, y0, x1, y1 } = this.placement.bounds;
    const width = this.element.clientWidth || 800;
    const height = this.element.clientHeight || 500;
    const pad = 40;
    const k = Math.min(2, (width - 2 * pad) / Math.max(1, x1 - x0), (height - 2 * pad) / Math.max(1, y1 - y0));
    const t = zoomIdentity
      .translate(width / 2, height / 2)
      .scale(k)
      .translate(-(x0 + x1) / 2, -(y0 + y1) / 2);
    if (animate)
      this.host
        .transition()
        .duration(400)
        .call((s) => this.zoomer.transform(s, t));
    else this.host.call((s) => this.zoomer.transform(s, t));
  }

  /** Re-fit if following (the view was hidden, and its size unknown, while agents arrived). */
  refit(): void {
    if (this.following) this.fit(false);
  }

  /** Centre on one agent, zoomed in enough to read its label. */
  focus(id: string): void {
    const placed = this.placement?.byId.get(id);
    if (!placed) return;
    this.follow(false);
    const width = this.element.clientWidth || 800;
    const height = this.element.clientHeight || 500;
    const k = Math.max(this.transform.k, 1.2);
    const t = zoomIdentity
      .translate(width / 2, height / 2)
      .scale(k)
      .translate(-placed.x, -placed.y);
    this.host
      .transition()
      .duration(400)
      .call((s) => this.zoomer.transform(s, t));
  }

  zoomBy(factor: number): void {
    this.follow(false);
    this.host
      .transition()
      .duration(200)
      .call((s) => this.zoomer.scaleBy(s, factor));
  }

  highlight(ids: string[]): void {
    this.matches = new Set(ids);
    this.surface?.mark(this.marks());
  }

  destroy(): void {
    window.clearTimeout(this.settleTimer);
    this.host.on(".zoom", null);
    this.surface?.destroy();
  }
}
