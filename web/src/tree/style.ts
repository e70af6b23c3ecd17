// How a tree node looks, shared by the SVG and canvas surfaces.

import { BEST_PATH, MATCH, scoreColor, UNSCORED } from "../colors";
import * as fmt from "../format";
import type { Placed } from "./layout";

export function radius(p: Placed): number {
  return 5 + Math.min(6, Math.sqrt(p.node.children) * 1.6);
}

export function fillOf(p: Placed): string {
  return p.node.score === null ? UNSCORED : scoreColor(p.node.score);
}

export function labelMeta(p: Placed): string {
  if (p.node.status === "admitted")
    return `${fmt.score(p.node.score)} · ${fmt.plural(p.node.children, "child", "children")}`;
  if (p.node.status === "rejected") return `rejected · ${fmt.score(p.node.score)}`;
  return p.node.status;
}

/** What the surfaces need besides positions: which nodes are marked, and how. */
export interface Marks {
  best: string | null;
  bestPath: Set<string>;
  matches: Set<string>;
  fresh: Set<string>;
}

export const STROKE = {
  node: "#1b1f24",
  best: BEST_PATH,
  match: MATCH,
  link: "#8c959f",
  faint: "#b9c0c8",
  evaluating: "#6e7781",
};

export const LABELS_AT_MOST = 250;

const STEPS = 32;
const BUCKETS = Array.from({ length: STEPS + 1 }, (_, i) => scoreColor(i / STEPS));

/** The fill in 1/32 score steps: a canvas fills each distinct colour once. */
export function bucketFill(p: Placed): string {
  return p.node.score === null
    ? UNSCORED
    : (BUCKETS[Math.round(Math.max(0, Math.min(1, p.node.score)) * STEPS)] ?? UNSCORED);
}
