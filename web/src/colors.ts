// Score colours: viridis (readable by people with colour-blindness), dark = low, yellow = high.

import { interpolateViridis } from "d3";

export function scoreColor(value: number): string {
  return interpolateViridis(Math.max(0, Math.min(1, value)));
}

export const BEST_PATH = "#c2410c";
export const MATCH = "#1d4ed8";
export const UNSCORED = "#ffffff";
export const CROSSOVER = "#8250df";
export const META_CHANGED = "#bf3989";
