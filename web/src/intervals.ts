// 95% Wilson score intervals, computed as contracts/intervals.py does: the lineage carries raw
// counts (resolved / attempted), so the page works them out instead of the service. A held-out
// interval holds for every agent its run compared on the held-out tasks at once (Bonferroni).

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

/** The standard normal's distribution function, by the Chebyshev fit to erfc published in Numerical Recipes (fractional error < 1.2e-7). */
function normalCdf(x: number): number {
  const t = 1 / (1 + Math.abs(x) / (2 * Math.SQRT2));
  const poly = [
    -1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806, 0.27886807, -1.13520398, 1.48851587, -0.82215223,
    0.17087277,
  ].reduceRight((acc, c) => c + t * acc, 0);
  const erfc = t * Math.exp(-(x * x) / 2 + poly);
  return x >= 0 ? 1 - erfc / 2 : erfc / 2;
}

/** The z of 95% intervals that hold for `compared` agents at once (contracts.intervals.simultaneous_z). */
export function simultaneousZ(compared: number | null | undefined): number {
  if (!compared || compared <= 1) return Z_95;
  const target = 1 - 0.025 / compared;
  let low = Z_95;
  let high = 10;
  for (let i = 0; i < 60; i++) {
    const mid = (low + high) / 2;
    if (normalCdf(mid) < target) low = mid;
    else high = mid;
  }
  return (low + high) / 2;
}

/** A fraction with its interval, or null when nothing was counted (null counts or 0 tasks). */
export function estimate(
  resolved: number | null | undefined,
  total: number | null | undefined,
  z = Z_95,
): Estimate | null {
  if (resolved === null || resolved === undefined || !total) return null;
  const [low, high] = wilson(resolved, total, z);
  return { value: resolved / total, low, high, resolved, total };
}

interface Counted {
  resolved: number | null;
  attempted: number | null;
  heldout_resolved: number | null;
  heldout_total: number | null;
  heldout_compared: number | null;
}

export function selectionEstimate(node: Counted): Estimate | null {
  return estimate(node.resolved, node.attempted);
}

export function heldoutEstimate(node: Counted): Estimate | null {
  return estimate(node.heldout_resolved, node.heldout_total, simultaneousZ(node.heldout_compared));
}
