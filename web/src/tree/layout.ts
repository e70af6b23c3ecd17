// Tidy tree positions (Reingold–Tilford, d3.tree), top-down or radial, and the link paths.

import { linkRadial, linkVertical, path as pathText, tree } from "d3";
import type { LineageNode } from "../api/types";
import type { TreeModel, TreeNode } from "./model";

export type LayoutKind = "tidy" | "radial";

export interface Placed {
  id: string;
  node: LineageNode;
  x: number;
  y: number;
}

export type LinkKind = "normal" | "faint" | "best";
type Link = { source: TreeNode; target: TreeNode };

export interface Placement {
  kind: LayoutKind;
  points: Placed[];
  byId: Map<string, Placed>;
  /** Links by how they are drawn: to the best agent, to a rejected child, or plain. */
  links: Record<LinkKind, Link[]>;
  /** A crossover child's second edge: from its other parent to it (drawn dashed). */
  cross: [Placed, Placed][];
  bounds: { x0: number; y0: number; x1: number; y1: number };
  labelled: boolean; // spaced for labels under every node
}

export const LABEL_LIMIT = 300;

export function place(model: TreeModel, kind: LayoutKind): Placement {
  const labelled = model.count <= LABEL_LIMIT;
  const points: Placed[] = [];
  const byId = new Map<string, Placed>();
  const at = new Map<TreeNode, [number, number]>();
  if (kind === "tidy") {
    const [dx, dy] = labelled ? [116, 96] : [16, 72];
    tree<TreeNode["data"]>()
      .nodeSize([dx, dy])
      .separation((a, b) => (a.parent === b.parent ? 1 : 1.2))(model.root);
    model.root.each((n) => at.set(n, [n.x ?? 0, n.y ?? 0]));
  } else {
    const leaves = model.root.leaves().length;
    const radius = Math.max(model.root.height * (labelled ? 110 : 70), (leaves * (labelled ? 60 : 9)) / (2 * Math.PI));
    tree<TreeNode["data"]>()
      .size([2 * Math.PI, radius])
      .separation((a, b) => (a.parent === b.parent ? 1 : 2) / Math.max(1, a.depth))(model.root);
    model.root.each((n) => {
      const angle = (n.x ?? 0) - Math.PI / 2;
      const r = n.y ?? 0;
      at.set(n, [r * Math.cos(angle), r * Math.sin(angle)]);
    });
  }
  let x0 = Infinity,
    y0 = Infinity,
    x1 = -Infinity,
    y1 = -Infinity;
  model.root.each((n) => {
    if (!n.data.node) return;
    const [x, y] = at.get(n) as [number, number];
    const placed = { id: n.data.node.id, node: n.data.node, x, y };
    points.push(placed);
    byId.set(placed.id, placed);
    x0 = Math.min(x0, x);
    y0 = Math.min(y0, y);
    x1 = Math.max(x1, x);
    y1 = Math.max(y1, y);
  });
  const cross: [Placed, Placed][] = [];
  for (const p of points) {
    const other = p.node.second_parent_id ? byId.get(p.node.second_parent_id) : undefined;
    if (other) cross.push([other, p]);
  }
  return { kind, points, byId, links: sortLinks(model), cross, bounds: { x0, y0, x1, y1 }, labelled };
}

function sortLinks(model: TreeModel): Placement["links"] {
  const links: Placement["links"] = { normal: [], faint: [], best: [] };
  for (const link of model.root.links()) {
    const child = link.target.data.node;
    if (!link.source.data.node || !child) continue; // the virtual root has no edges drawn
    if (model.bestPath.has(child.id)) links.best.push(link);
    else if (child.status === "rejected") links.faint.push(link);
    else links.normal.push(link);
  }
  return links;
}

function shape(kind: LayoutKind) {
  return kind === "tidy"
    ? linkVertical<Link, TreeNode>()
        .x((n) => n.x ?? 0)
        .y((n) => n.y ?? 0)
    : linkRadial<Link, TreeNode>()
        .angle((n) => n.x ?? 0)
        .radius((n) => n.y ?? 0);
}

/** SVG path data for one kind of link: one <path> each, however many links. */
export function linkData(placement: Placement, which: LinkKind): string {
  const draw = shape(placement.kind);
  return placement.links[which].map((link) => draw(link) ?? "").join("");
}

/** The same links traced straight into a Path2D (no path text to build and parse). */
export function linkPath2D(placement: Placement, which: LinkKind): Path2D {
  const path = new Path2D();
  const draw = shape(placement.kind).context(path as unknown as CanvasRenderingContext2D);
  for (const link of placement.links[which]) draw(link);
  return path;
}

interface Tracer {
  moveTo(x: number, y: number): void;
  quadraticCurveTo(cx: number, cy: number, x: number, y: number): void;
}

export interface Box {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

const BEND = 0.18;

/** Second-parent edges as gentle arcs (bent to one side, so they stand apart from tree links). */
function traceCross(placement: Placement, out: Tracer, within?: Box): void {
  for (const [from, to] of placement.cross) {
    const cx = (from.x + to.x) / 2 - (to.y - from.y) * BEND;
    const cy = (from.y + to.y) / 2 + (to.x - from.x) * BEND;
    // The curve stays inside the box of its three points: skip it when that box is out of view.
    if (
      within &&
      (Math.max(from.x, to.x, cx) < within.x0 ||
        Math.min(from.x, to.x, cx) > within.x1 ||
        Math.max(from.y, to.y, cy) < within.y0 ||
        Math.min(from.y, to.y, cy) > within.y1)
    )
      continue;
    out.moveTo(from.x, from.y);
    out.quadraticCurveTo(cx, cy, to.x, to.y);
  }
}

export function crossData(placement: Placement): string {
  const out = pathText();
  traceCross(placement, out);
  return out.toString();
}

/** The crossover edges that may cross `within` (a dashed path is dashed along all its length). */
export function crossPath2D(placement: Placement, within: Box): Path2D {
  const out = new Path2D();
  traceCross(placement, out, within);
  return out;
}
