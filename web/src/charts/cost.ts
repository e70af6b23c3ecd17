// Cost over time: the run's cumulative USD from its metered LLM calls, against its budget.

import { axisBottom, axisLeft, line, scaleLinear, scaleTime } from "d3";
import type { RunUsage } from "../api/types";
import * as fmt from "../format";
import { frame } from "./frame";

export function drawCostChart(container: HTMLElement, usage: RunUsage, maxUsd: number | null): string {
  const points = usage.points.map((p) => ({ at: fmt.parseTime(p.at), usd: p.usd, tokens: p.tokens }));
  const last = points[points.length - 1];
  const summary = last
    ? `${fmt.usd(last.usd)} and ${fmt.tokens(last.tokens)} tokens spent${maxUsd ? ` of a ${fmt.usd(maxUsd)} budget` : ""}.`
    : "No LLM call has been metered yet.";
  const { g, width, height } = frame(container, `Cost over time. ${summary}`);
  const first = points[0];
  const start = first ? first.at : new Date();
  const end = last && last.at > start ? last.at : new Date(start.getTime() + 1000);
  const top = Math.max(last?.usd ?? 0, 0.01) * 1.1;
  // Draw the budget line only when it is near enough to read the spending under it.
  const budgetShown = maxUsd !== null && maxUsd <= top * 3;
  const x = scaleTime().domain([start, end]).range([0, width]);
  const y = scaleLinear()
    .domain([0, budgetShown && maxUsd ? Math.max(top, maxUsd * 1.05) : top])
    .nice()
    .range([height, 0]);
  g.append("g").attr("class", "axis").attr("transform", `translate(0,${height})`).call(axisBottom(x).ticks(4));
  const [, high] = y.domain() as [number, number];
  const digits = high >= 0.1 ? 2 : Math.min(4, Math.ceil(-Math.log10(high)) + 1);
  g.append("g")
    .attr("class", "axis")
    .call(
      axisLeft(y)
        .ticks(5)
        .tickFormat((v) => `$${Number(v).toFixed(digits)}`),
    );
  if (budgetShown && maxUsd) {
    g.append("line")
      .attr("class", "budget-line")
      .attr("x1", 0)
      .attr("x2", width)
      .attr("y1", y(maxUsd))
      .attr("y2", y(maxUsd));
    g.append("text")
      .attr("class", "axis-label")
      .attr("x", width)
      .attr("y", y(maxUsd) - 4)
      .attr("text-anchor", "end")
      .text(`budget ${fmt.usd(maxUsd)}`);
  }
  if (points.length) {
    const series = [{ at: start, usd: 0, tokens: 0 }, ...points];
    g.append("path")
      .attr("class", "series cost")
      .attr(
        "d",
        line<(typeof series)[number]>()
          .x((p) => x(p.at))
          .y((p) => y(p.usd))(series),
      );
  }
  return summary;
}
