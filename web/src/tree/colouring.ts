// What a node's fill says: its score (viridis), or the island, niche, group or epoch it
// belongs to (a categorical palette, the largest categories first, the rest grey).

import { schemeTableau10 } from "d3";
import type { LineageNode } from "../api/types";
import { scoreColor, UNSCORED } from "../colors";

export type ColorBy = "score" | "island" | "niche" | "group" | "epoch";

export const COLOR_BY: [ColorBy, string][] = [
  ["score", "Score"],
  ["island", "Island"],
  ["niche", "Niche"],
  ["group", "Group"],
  ["epoch", "Epoch"],
];

export function isColorBy(value: string | null): value is ColorBy {
  return COLOR_BY.some(([key]) => key === value);
}

export const OTHER = "#c4cad1";
export const NONE = UNSCORED;

export interface Category {
  label: string;
  color: string;
  count: number;
}

export interface Colouring {
  by: ColorBy;
  /** The fill of one node; a few distinct strings, so a canvas fills each colour once. */
  fill: (node: LineageNode) => string;
  /** Categories in the legend's order (empty when colouring by score). */
  categories: Category[];
}

const STEPS = 32;
const BUCKETS = Array.from({ length: STEPS + 1 }, (_, i) => scoreColor(i / STEPS));

/** The score's fill in 1/32 steps (indistinguishable by eye, and few distinct colours). */
export function scoreFill(node: LineageNode): string {
  return node.score === null
    ? UNSCORED
    : (BUCKETS[Math.round(Math.max(0, Math.min(1, node.score)) * STEPS)] ?? UNSCORED);
}

function keyOf(node: LineageNode, by: Exclude<ColorBy, "score">): string | number | null {
  if (by === "island") return node.island;
  if (by === "niche") return node.niche;
  if (by === "group") return node.group;
  return node.epoch;
}

function labelOf(by: Exclude<ColorBy, "score">, key: string | number): string {
  return by === "island" || by === "epoch" ? `${by} ${key}` : String(key);
}

export function colouring(nodes: LineageNode[], by: ColorBy): Colouring {
  if (by === "score") return { by, fill: scoreFill, categories: [] };
  const counts = new Map<string | number, number>();
  let none = 0;
  for (const node of nodes) {
    const key = keyOf(node, by);
    if (key === null) none += 1;
    else counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const numeric = by === "island" || by === "epoch";
  // Islands and epochs in their own order; niches and groups largest first.
  const keys = [...counts.keys()].sort((a, b) =>
    numeric ? Number(a) - Number(b) : (counts.get(b) ?? 0) - (counts.get(a) ?? 0) || String(a).localeCompare(String(b)),
  );
  const palette = schemeTableau10;
  const shown = keys.length <= palette.length ? keys : keys.slice(0, palette.length - 1);
  const colors = new Map<string | number, string>(shown.map((key, i) => [key, palette[i] ?? OTHER]));
  const categories: Category[] = shown.map((key) => ({
    label: labelOf(by, key),
    color: colors.get(key) ?? OTHER,
    count: counts.get(key) ?? 0,
  }));
  const rest = keys.length - shown.length;
  if (rest > 0) {
    const count = keys.slice(shown.length).reduce<number>((sum, key) => sum + (counts.get(key) ?? 0), 0);
    categories.push({ label: `${rest} other ${by === "niche" ? "niches" : `${by}s`}`, color: OTHER, count });
  }
  if (none > 0) categories.push({ label: `no ${by}`, color: NONE, count: none });
  return {
    by,
    fill: (node) => {
      const key = keyOf(node, by);
      return key === null ? NONE : (colors.get(key) ?? OTHER);
    },
    categories,
  };
}
