// A run's lineage as a hierarchy: children in creation order, the best agent and its path.

import { hierarchy, type HierarchyNode } from "d3";
import type { LineageNode } from "../api/types";

export interface Datum {
  node: LineageNode | null; // null: a virtual root above several roots
  children: Datum[];
}

export type TreeNode = HierarchyNode<Datum>;

export interface TreeModel {
  nodes: LineageNode[];
  root: TreeNode;
  byId: Map<string, TreeNode>;
  count: number;
  best: string | null;
  bestPath: Set<string>;
}

/** The best admitted agent, as the service ranks it: highest score, then the earliest. */
export function bestOf(nodes: LineageNode[]): string | null {
  let best: LineageNode | null = null;
  for (const node of nodes) {
    if (node.status !== "admitted" || node.score === null) continue;
    if (best === null || node.score > (best.score ?? -1)) best = node;
  }
  return best?.id ?? null;
}

export function buildModel(nodes: LineageNode[]): TreeModel {
  const data = new Map<string, Datum>();
  for (const node of nodes) data.set(node.id, { node, children: [] });
  const roots: Datum[] = [];
  for (const node of nodes) {
    const datum = data.get(node.id) as Datum;
    const parent = node.parent_id ? data.get(node.parent_id) : undefined;
    if (parent) parent.children.push(datum);
    else roots.push(datum);
  }
  const top: Datum = roots.length === 1 && roots[0] ? roots[0] : { node: null, children: roots };
  const root = hierarchy(top, (d) => d.children);
  const byId = new Map<string, TreeNode>();
  root.each((n) => {
    if (n.data.node) byId.set(n.data.node.id, n);
  });
  const best = bestOf(nodes);
  const bestPath = new Set<string>();
  for (let n = best ? byId.get(best) : undefined; n?.data.node; n = n.parent ?? undefined) {
    bestPath.add(n.data.node.id);
  }
  return { nodes, root, byId, count: nodes.length, best, bestPath };
}

/** Ids starting with the query (case-insensitive); at least 3 characters to search. */
export function findIds(model: TreeModel, query: string): string[] {
  const q = query.trim().toLowerCase();
  if (q.length < 3) return [];
  return [...model.byId.keys()].filter((id) => id.startsWith(q));
}
