// The canvas surface for large trees: thousands of SVG elements cost seconds to style and
// paint, a canvas redraws them in milliseconds. Hit testing goes through a quadtree.

import { quadtree, zoomIdentity, type Quadtree, type ZoomTransform } from "d3";
import * as fmt from "../format";
import { crossPath2D, linkPath2D, type Placed, type Placement } from "./layout";
import { dotRadius, LABELS_AT_MOST, labelMeta, radius, ringRadius, STROKE, type Marks } from "./style";
import { inView, type Surface } from "./surface";

const PLAIN = 1.2; // a plain node outline, in screen pixels
// Admitted, rejected (faint, dashed) and evaluating (dashed) nodes, in the order of `nodes()`.
const STATUS_STYLES = [
  { stroke: STROKE.node, dash: false, fillAlpha: 1, strokeAlpha: 1 },
  { stroke: STROKE.node, dash: true, fillAlpha: 0.3, strokeAlpha: 0.45 },
  { stroke: STROKE.evaluating, dash: true, fillAlpha: 1, strokeAlpha: 1 },
];
const MANY = 1500; // nodes in view from which lines are drawn as hairlines

export class CanvasSurface implements Surface {
  readonly element: HTMLCanvasElement;
  private readonly ctx: CanvasRenderingContext2D;
  private placement: Placement | null = null;
  private marks: Marks | null = null;
  private paths: { normal: Path2D; faint: Path2D; best: Path2D } | null = null;
  private index: Quadtree<Placed> | null = null;
  private transform: ZoomTransform = zoomIdentity;
  private frame = 0;
  private labels = false;
  private labelsDrawn = false;
  private size = "";
  private readonly resize: ResizeObserver;

  constructor(private readonly host: HTMLElement) {
    this.element = document.createElement("canvas");
    this.element.className = "tree-surface";
    this.element.setAttribute("role", "img");
    host.append(this.element);
    this.ctx = this.element.getContext("2d", { alpha: false }) as CanvasRenderingContext2D;
    // Only a real change of size repaints (the observer also reports the first size).
    this.resize = new ResizeObserver(() => {
      if (this.size !== `${host.clientWidth}x${host.clientHeight}`) this.request();
    });
    this.resize.observe(host);
  }

  draw(placement: Placement, marks: Marks): void {
    this.placement = placement;
    this.marks = marks;
    this.paths = {
      normal: linkPath2D(placement, "normal"),
      faint: linkPath2D(placement, "faint"),
      best: linkPath2D(placement, "best"),
    };
    this.index = quadtree<Placed>()
      .x((p) => p.x)
      .y((p) => p.y)
      .addAll(placement.points);
    this.request();
  }

  mark(marks: Marks): void {
    this.marks = marks;
    this.request();
  }

  move(transform: ZoomTransform): void {
    this.transform = transform;
    this.labels = false; // labels come back when the gesture settles
    this.labelsDrawn = false;
    this.request();
  }

  settle(): void {
    this.labels = true;
    // Every full repaint of thousands of nodes costs a frame: repaint only to add labels.
    if (!this.labelsDrawn && this.placement && this.readable(this.visible())) this.request();
  }

  private visible(): Placed[] {
    return this.placement ? inView(this.placement, this.transform, this.host.clientWidth, this.host.clientHeight) : [];
  }

  private readable(visible: Placed[]): boolean {
    return visible.length <= LABELS_AT_MOST && this.transform.k >= 0.6;
  }

  private request(): void {
    if (!this.frame) this.frame = requestAnimationFrame(() => this.paint());
  }

  private paint(): void {
    this.frame = 0;
    const { placement, paths, marks, ctx } = this;
    const width = this.host.clientWidth;
    const height = this.host.clientHeight;
    this.size = `${width}x${height}`;
    const ratio = window.devicePixelRatio || 1;
    if (this.element.width !== Math.round(width * ratio) || this.element.height !== Math.round(height * ratio)) {
      this.element.width = Math.round(width * ratio);
      this.element.height = Math.round(height * ratio);
      this.element.style.width = `${width}px`;
      this.element.style.height = `${height}px`;
    }
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = "#fbfcfd";
    ctx.fillRect(0, 0, this.element.width, this.element.height);
    if (!placement || !paths || !marks) return;
    const t = this.transform;
    ctx.setTransform(ratio * t.k, 0, 0, ratio * t.k, ratio * t.x, ratio * t.y);
    const px = 1 / t.k; // one screen pixel in layout units
    // One device pixel, a hair under: a stroke that comes out even a rounding error wider than
    // a device pixel leaves the rasteriser's hairline path and costs several times more.
    const hairline = (0.999 * px) / ratio;
    // Far out, thousands of links would bury the nodes: draw them lighter. Plain links are
    // hairlines (one device pixel), which software rasterisers draw several times faster.
    ctx.globalAlpha = t.k < 0.5 ? 0.6 : 1;
    ctx.lineWidth = hairline;
    ctx.strokeStyle = STROKE.link;
    ctx.setLineDash([]);
    ctx.stroke(paths.normal);
    ctx.strokeStyle = STROKE.faint;
    ctx.setLineDash([4 * px, 3 * px]);
    ctx.stroke(paths.faint);
    ctx.setLineDash([]);
    ctx.globalAlpha = 1;
    ctx.strokeStyle = STROKE.best;
    ctx.lineWidth = 3 * px;
    ctx.stroke(paths.best);
    const visible = inView(placement, t, width, height);
    // Lines wider than a device pixel take a software rasteriser's slow path (ten times slower
    // for thousands of circles): with many nodes in view, outlines and marks are hairlines.
    const thin = visible.length > MANY ? hairline : 0;
    if (placement.cross.length) {
      // Dashed hairlines, and only those that can be in view: dashing long curves is costly.
      const [x0, y0] = t.invert([0, 0]);
      const [x1, y1] = t.invert([width, height]);
      ctx.strokeStyle = STROKE.cross;
      ctx.lineWidth = hairline;
      ctx.globalAlpha = thin ? 0.45 : 1; // far out, lighter: they would bury the tree
      ctx.setLineDash([5 * px, 3 * px]);
      ctx.stroke(crossPath2D(placement, { x0, y0, x1, y1 }));
      ctx.setLineDash([]);
      ctx.globalAlpha = 1;
    }
    this.nodes(visible, px, thin, marks);
    this.labelsDrawn = this.labels && this.readable(visible);
    if (this.labelsDrawn) this.drawLabels(visible, ratio);
  }

  /**
   * Nodes in a few batches: one path per status and colour, filled and then outlined in the
   * status's style; marked nodes (the best path, matches) outlined again on top. Filling and
   * stroking thousands of circles one by one is what makes a large canvas slow.
   */
  private nodes(visible: Placed[], px: number, thin: number, marks: Marks): void {
    const ctx = this.ctx;
    const byStatus = STATUS_STYLES.map(() => new Map<string, Path2D>());
    const marked = new Map<string, { path: Path2D; color: string; width: number }>();
    const rings = new Path2D();
    const dots = new Path2D();
    for (const p of visible) {
      const r = Math.max(radius(p), 2.5 * px); // at least 5 pixels across, to show its colour
      const status = p.node.status === "rejected" ? 1 : p.node.status === "evaluating" ? 2 : 0;
      const groups = byStatus[status] as Map<string, Path2D>;
      const fill = marks.fill(p.node);
      let path = groups.get(fill);
      if (!path) groups.set(fill, (path = new Path2D()));
      path.moveTo(p.x + r, p.y);
      path.arc(p.x, p.y, r, 0, 2 * Math.PI);
      if (p.node.meta_changed) {
        const rr = r + Math.max(ringRadius(p) - radius(p), 2 * px);
        rings.moveTo(p.x + rr, p.y);
        rings.arc(p.x, p.y, rr, 0, 2 * Math.PI);
      }
      if (p.node.same_as) {
        const dr = Math.max(dotRadius(p), 1.2 * px);
        dots.moveTo(p.x + dr, p.y);
        dots.arc(p.x, p.y, dr, 0, 2 * Math.PI);
      }
      let mark: [string, number] | null = null;
      if (marks.bestPath.has(p.id)) mark = [STROKE.best, p.id === marks.best ? 4 : 2.5];
      if (marks.matches.has(p.id) || marks.fresh.has(p.id)) mark = [STROKE.match, 4];
      if (!mark) continue;
      const key = mark.join("|");
      let outline = marked.get(key);
      if (!outline) marked.set(key, (outline = { path: new Path2D(), color: mark[0], width: mark[1] }));
      outline.path.moveTo(p.x + r, p.y);
      outline.path.arc(p.x, p.y, r, 0, 2 * Math.PI);
    }
    STATUS_STYLES.forEach((style, i) => {
      const groups = byStatus[i] as Map<string, Path2D>;
      ctx.setLineDash(style.dash ? [3 * px, 2 * px] : []);
      ctx.strokeStyle = style.stroke;
      ctx.lineWidth = thin || PLAIN * px;
      for (const [fill, path] of groups) {
        ctx.globalAlpha = style.fillAlpha;
        ctx.fillStyle = fill;
        ctx.fill(path);
        ctx.globalAlpha = style.strokeAlpha;
        ctx.stroke(path);
      }
    });
    ctx.globalAlpha = 1;
    ctx.setLineDash([]);
    // Thick outlines (the best path, matches) last, so they stay on top.
    for (const o of [...marked.values()].sort((a, b) => a.width - b.width)) {
      ctx.strokeStyle = o.color;
      ctx.lineWidth = o.width * px;
      ctx.stroke(o.path);
    }
    ctx.strokeStyle = STROKE.meta;
    ctx.lineWidth = thin || 2 * px;
    ctx.stroke(rings);
    ctx.fillStyle = STROKE.node;
    ctx.fill(dots);
  }

  private drawLabels(visible: Placed[], ratio: number): void {
    const ctx = this.ctx;
    const t = this.transform;
    ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    ctx.setLineDash([]);
    ctx.font = "10px system-ui, sans-serif";
    ctx.lineWidth = 3;
    ctx.strokeStyle = "#fbfcfd";
    for (const p of visible) {
      const [x, y] = t.apply([p.x, p.y]);
      const left = x + radius(p) * t.k + 4;
      ctx.fillStyle = p.node.status === "rejected" ? "#57606a" : "#1b1f24";
      for (const [text, dy] of [
        [fmt.shortId(p.id, 7), -1],
        [labelMeta(p), 10],
      ] as const) {
        ctx.strokeText(text, left, y + dy);
        ctx.fillText(text, left, y + dy);
      }
    }
  }

  nodeAt(event: MouseEvent): Placed | null {
    if (!this.index) return null;
    const box = this.element.getBoundingClientRect();
    const [x, y] = this.transform.invert([event.clientX - box.left, event.clientY - box.top]);
    const found = this.index.find(x, y, 11 + 3 / this.transform.k);
    if (!found) return null;
    const reach = radius(found) + 3 / this.transform.k;
    return (found.x - x) ** 2 + (found.y - y) ** 2 <= reach ** 2 ? found : null;
  }

  destroy(): void {
    cancelAnimationFrame(this.frame);
    this.resize.disconnect();
    this.element.remove();
  }
}
