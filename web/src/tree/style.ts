// How a tree node looks, shared by the SVG and canvas surfaces.

import { BEST_PATH, CROSSOVER, MATCH, META_CHANGED } from "../colors";
import * as fmt from "../format";
import type { LineageNode } from "../api/types";
import type { Placed } from "./layout";

export function radius(p: Placed): number {
  return 5 + Math.min(6, Math.sqrt(p.node.children) * 1.6);
}

export function labelMeta(p: Placed): string {
  if (p.node.status === "admitted")
    return `${fmt.score(p.node.score)} · ${fmt.plural(p.node.children, "child", "children")}`;
  if (p.node.status === "rejected") return `rejected · ${fmt.score(p.node.score)}`;
  return p.node.status;
}

/** What the surfaces need besides positions: which nodes are marked, and how they are filled. */
export interface Marks {
  best: string | null;
  bestPath: Set<string>;
  matches: Set<string>;
  fresh: Set<string>;
  fill: (node: LineageNode) => string;
}

export const STROKE = {
  node: "#1b1f24",
  best: BEST_PATH,
  match: MATCH,
  link: "#8c959f",
  faint: "#b9c0c8",
  evaluating: "#6e7781",
  cross: CROSSOVER,
  meta: META_CHANGED,
};

export const LABELS_AT_MOST = 250;

/** The ring around a child that changed its own improvement procedure (hyperagent mode). */
export function ringRadius(p: Placed): number {
  return radius(p) + 3.5;
}

/** The dot in the middle of a child whose code equals an earlier agent's (results reused). */
export function dotRadius(p: Placed): number {
  return Math.max(1.8, radius(p) * 0.38);
}
