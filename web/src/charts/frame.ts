// A chart's frame: an SVG sized to its container with margins, and a text summary for readers.

import { select, type Selection } from "d3";
import { h } from "../dom";

export const MARGIN = { top: 12, right: 16, bottom: 34, left: 46 };

export interface Frame {
  g: Selection<SVGGElement, unknown, null, undefined>;
  width: number;
  height: number;
}

export function frame(container: HTMLElement, label: string, height = 190): Frame {
  const width = Math.max(240, container.clientWidth || 360);
  container.replaceChildren();
  const svg = select(container)
    .append("svg")
    .attr("class", "chart")
    .attr("viewBox", `0 0 ${width} ${height}`)
    .attr("width", width)
    .attr("height", height)
    .attr("role", "img")
    .attr("aria-label", label);
  const g = svg.append("g").attr("transform", `translate(${MARGIN.left},${MARGIN.top})`);
  return { g, width: width - MARGIN.left - MARGIN.right, height: height - MARGIN.top - MARGIN.bottom };
}

export function legend(items: [string, string][]): HTMLElement {
  return h(
    "ul",
    { class: "chart-legend" },
    items.map(([cls, text]) => h("li", null, h("span", { class: `key ${cls}`, "aria-hidden": "true" }), text)),
  );
}

/** Redraw when the container changes width (a narrow window, a rotated phone). */
export function onResize(container: HTMLElement, draw: () => void): () => void {
  let last = container.clientWidth;
  const observer = new ResizeObserver(() => {
    if (Math.abs(container.clientWidth - last) < 8) return;
    last = container.clientWidth;
    draw();
  });
  observer.observe(container);
  return () => observer.disconnect();
}
