// What the hover card, the list view and the agent page say about a node's search data.

import type { LineageNode } from "../api/types";
import * as fmt from "../format";
import { heldoutEstimate, selectionEstimate } from "../intervals";

/** The facts the hover card and the agent page both show about a node's search data. */
export function searchFacts(node: LineageNode): [string, string][] {
  const rows: [string, string][] = [];
  const heldout = heldoutEstimate(node);
  if (heldout) rows.push(["Held-out", fmt.estimate(heldout)]);
  rows.push(["Epoch", String(node.epoch)]);
  if (node.island !== null) rows.push(["Island", String(node.island)]);
  if (node.niche !== null) rows.push(["Niche", node.niche]);
  if (node.group !== null) rows.push(["Group", node.group]);
  if (node.second_parent_id) rows.push(["Crossover with", fmt.shortId(node.second_parent_id, 12)]);
  const race = raceText(node);
  if (race) rows.push(["Race", race]);
  return rows;
}

// Why the racing evaluation policy stopped measuring the agent (docs/racing.md).
const RACE_STOPS: Record<string, string> = {
  stage_complete: "every task measured",
  clearly_passes: "stopped early: clearly passes",
  cannot_reach_threshold: "stopped: cannot reach the threshold",
  cannot_beat_parent: "stopped: cannot beat its parent",
  below_top_k: "stopped: below the top k",
};

export function raceText(node: LineageNode): string | null {
  if (!node.race_stop) return null;
  const evaluated = node.attempted === null ? "" : `, ${fmt.integer(node.attempted)} evaluations`;
  return `${RACE_STOPS[node.race_stop] ?? node.race_stop}${evaluated}`;
}

export function scoreText(node: LineageNode): string {
  const selection = selectionEstimate(node);
  return selection ? fmt.estimate(selection) : fmt.score(node.score);
}

export function reuseText(node: LineageNode): string | null {
  return node.same_as ? `same code as ${fmt.shortId(node.same_as, 12)}, results reused` : null;
}

export const META_TEXT = "changed its own improvement procedure";
