// The SVG surface: one <circle> per agent (clickable, testable, styled by CSS), one <path> per
// kind of link, and labels for the nodes in view when few enough are in view to read them.

import { select, zoomIdentity, type Selection, type ZoomTransform } from "d3";
import * as fmt from "../format";
import { crossData, linkData, type Placed, type Placement } from "./layout";
import { dotRadius, LABELS_AT_MOST, labelMeta, radius, ringRadius, type Marks } from "./style";
import { inView, type Surface } from "./surface";

export class SvgSurface implements Surface {
  readonly element: SVGSVGElement;
  private readonly viewport: Selection<SVGGElement, unknown, null, undefined>;
  private placement: Placement | null = null;
  private marks: Marks | null = null;
  private transform: ZoomTransform = zoomIdentity;

  constructor(private readonly host: HTMLElement) {
    const svg = select(host).append("svg").attr("class", "tree-svg").attr("role", "img");
    this.element = svg.node() as SVGSVGElement;
    this.viewport = svg.append("g").attr("class", "viewport");
    for (const cls of ["normal", "faint", "best", "cross"]) this.viewport.append("path").attr("class", `links ${cls}`);
    this.viewport.append("g").attr("class", "rings").attr("aria-hidden", "true");
    this.viewport.append("g").attr("class", "nodes");
    this.viewport.append("g").attr("class", "dots").attr("aria-hidden", "true");
    this.viewport.append("g").attr("class", "labels").attr("aria-hidden", "true");
  }

  private classes(p: Placed): string {
    const m = this.marks;
    const list = ["node", `status-${p.node.status}`];
    if (m?.bestPath.has(p.id)) list.push("on-best-path");
    if (p.id === m?.best) list.push("best");
    if (m?.matches.has(p.id)) list.push("match");
    if (m?.fresh.has(p.id)) list.push("fresh");
    if (p.node.second_parent_id) list.push("crossover");
    if (p.node.meta_changed) list.push("meta-changed");
    if (p.node.same_as) list.push("same-as");
    return list.join(" ");
  }

  draw(placement: Placement, marks: Marks): void {
    this.placement = placement;
    this.marks = marks;
    const { points } = placement;
    for (const which of ["normal", "faint", "best"] as const) {
      this.viewport.select(`path.links.${which}`).attr("d", linkData(placement, which) || null);
    }
    this.viewport.select("path.links.cross").attr("d", crossData(placement) || null);
    this.viewport
      .select<SVGGElement>("g.rings")
      .selectAll<SVGCircleElement, Placed>("circle.meta-ring")
      .data(
        points.filter((p) => p.node.meta_changed),
        (p) => p.id,
      )
      .join("circle")
      .attr("class", "meta-ring")
      .attr("cx", (p) => p.x)
      .attr("cy", (p) => p.y)
      .attr("r", ringRadius);
    this.viewport
      .select<SVGGElement>("g.dots")
      .selectAll<SVGCircleElement, Placed>("circle.same-dot")
      .data(
        points.filter((p) => p.node.same_as),
        (p) => p.id,
      )
      .join("circle")
      .attr("class", "same-dot")
      .attr("cx", (p) => p.x)
      .attr("cy", (p) => p.y)
      .attr("r", dotRadius);
    this.viewport
      .select<SVGGElement>("g.nodes")
      .selectAll<SVGCircleElement, Placed>("circle.node")
      .data(points, (p) => p.id)
      .join("circle")
      .attr("class", (p) => this.classes(p))
      .attr("data-id", (p) => p.id)
      .attr("cx", (p) => p.x)
      .attr("cy", (p) => p.y)
      .attr("r", radius)
      .attr("fill", (p) => marks.fill(p.node));
  }

  mark(marks: Marks): void {
    this.marks = marks;
    this.viewport
      .selectAll<SVGCircleElement, Placed>("circle.node")
      .attr("class", (p) => this.classes(p))
      .attr("fill", (p) => marks.fill(p.node));
  }

  move(transform: ZoomTransform): void {
    this.transform = transform;
    this.viewport.attr("transform", transform.toString());
  }

  settle(): void {
    if (!this.placement) return;
    const t = this.transform;
    const visible = inView(this.placement, t, this.host.clientWidth, this.host.clientHeight);
    const readable = visible.length <= LABELS_AT_MOST && t.k * (this.placement.labelled ? 1 : 5) >= 0.45;
    this.viewport
      .select<SVGGElement>("g.labels")
      .selectAll<SVGTextElement, Placed>("text")
      .data(readable ? visible : [], (p) => p.id)
      .join((enter) => {
        const text = enter.append("text");
        text.append("tspan").attr("class", "label-id");
        text.append("tspan").attr("class", "label-meta");
        return text;
      })
      .attr("class", (p) => `label status-${p.node.status}`)
      .each(function (p) {
        // Right of the node: links leave it upwards and downwards, so they never cross the text.
        const x = p.x + radius(p) + 4;
        const text = select(this);
        text
          .select("tspan.label-id")
          .attr("x", x)
          .attr("y", p.y - 1)
          .text(fmt.shortId(p.id, 7));
        text
          .select("tspan.label-meta")
          .attr("x", x)
          .attr("y", p.y + 10)
          .text(labelMeta(p));
      });
  }

  nodeAt(event: MouseEvent): Placed | null {
    const target = event.target as Element | null;
    if (!(target instanceof SVGCircleElement) || !target.classList.contains("node")) return null;
    return this.placement?.byId.get(target.dataset.id ?? "") ?? null;
  }

  destroy(): void {
    this.element.remove();
  }
}
