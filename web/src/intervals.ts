// 95% Wilson score intervals, computed as contracts/intervals.py does: the lineage carries raw
// counts (resolved / attempted), so the page works them out instead of the service.

const Z_95 = 1.959963984540054; // the standard normal's 97.5% quantile

export interface Estimate {
  value: number;
  low: number;
  high: number;
  resolved: number;
  total: number;
}

/** The (low, high) Wilson interval of `resolved` in `total`; (0, 1) for none. */
export function wilson(resolved: number, total: number, z = Z_95): [number, number] {
  if (total <= 0) return [0, 1];
  const p = resolved / total;
  const z2n = (z * z) / total;
  const centre = (p + z2n / 2) / (1 + z2n);
  const half = (z * Math.sqrt((p * (1 - p)) / total + z2n / (4 * total))) / (1 + z2n);
  const low = resolved === 0 ? 0 : Math.max(0, centre - half);
  const high = resolved === total ? 1 : Math.min(1, centre + half);
  return [low, high];
}

/** A fraction with its interval, or null when nothing was counted (null counts or 0 tasks). */
export function estimate(resolved: number | null | undefined, total: number | null | undefined): Estimate | null {
  if (resolved === null || resolved === undefined || !total) return null;
  const [low, high] = wilson(resolved, total);
  return { value: resolved / total, low, high, resolved, total };
}

interface Counted {
  resolved: number | null;
  attempted: number | null;
  heldout_resolved: number | null;
  heldout_total: number | null;
}

export function selectionEstimate(node: Counted): Estimate | null {
  return estimate(node.resolved, node.attempted);
}

export function heldoutEstimate(node: Counted): Estimate | null {
  return estimate(node.heldout_resolved, node.heldout_total);
}
