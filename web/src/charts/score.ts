// Score over steps: the best admitted score so far, and the mean score of the archive so far.

import { axisBottom, axisLeft, line, scaleLinear } from "d3";
import type { LineageNode } from "../api/types";
import * as fmt from "../format";
import { frame } from "./frame";

export interface ScorePoint {
  step: number;
  best: number;
  mean: number;
}

/** One point per step that scored an agent (admitted agents make up the archive). */
export function scoreSeries(nodes: LineageNode[]): ScorePoint[] {
  const scored = nodes
    .filter((n) => n.status === "admitted" && n.score !== null && n.step !== null)
    .sort((a, b) => (a.step ?? 0) - (b.step ?? 0));
  const out: ScorePoint[] = [];
  let best = -Infinity;
  let sum = 0;
  scored.forEach((n, i) => {
    const value = n.score ?? 0;
    best = Math.max(best, value);
    sum += value;
    const point = { step: n.step ?? 0, best, mean: sum / (i + 1) };
    if (out.length && out[out.length - 1]?.step === point.step) out[out.length - 1] = point;
    else out.push(point);
  });
  return out;
}

const MAX_POINTS = 300;

/** At most MAX_POINTS points, keeping every step where the best score rose. */
export function thin(series: ScorePoint[]): ScorePoint[] {
  if (series.length <= MAX_POINTS) return series;
  const every = Math.ceil(series.length / MAX_POINTS);
  return series.filter((p, i) => i % every === 0 || i === series.length - 1 || p.best !== series[i - 1]?.best);
}

export function drawScoreChart(container: HTMLElement, nodes: LineageNode[]): string {
  const series = thin(scoreSeries(nodes));
  const last = series[series.length - 1];
  const summary = last
    ? `Best score ${fmt.score(last.best)} and archive mean ${fmt.score(last.mean)} after step ${last.step}.`
    : "No agent has been scored yet.";
  const { g, width, height } = frame(container, `Score over steps. ${summary}`);
  const maxStep = Math.max(1, ...series.map((p) => p.step));
  const x = scaleLinear().domain([0, maxStep]).range([0, width]);
  const y = scaleLinear().domain([0, 1]).range([height, 0]);
  g.append("g")
    .attr("class", "axis")
    .attr("transform", `translate(0,${height})`)
    .call(
      axisBottom(x)
        .ticks(Math.min(maxStep, 6))
        .tickFormat((v) => String(v)),
    );
  g.append("g").attr("class", "axis").call(axisLeft(y).ticks(5));
  g.append("text")
    .attr("class", "axis-label")
    .attr("x", width)
    .attr("y", height + 30)
    .attr("text-anchor", "end")
    .text("step");
  if (series.length) {
    // Steps between scored agents keep the previous value: draw steps, not slopes.
    const stepped = (key: "best" | "mean") =>
      line<ScorePoint>()
        .x((p) => x(p.step))
        .y((p) => y(p[key]))(
        series.flatMap((p, i) => (i === series.length - 1 ? [p] : [p, { ...p, step: series[i + 1]?.step ?? p.step }])),
      );
    g.append("path").attr("class", "series mean").attr("d", stepped("mean"));
    g.append("path").attr("class", "series best").attr("d", stepped("best"));
    g.selectAll("circle.point")
      .data(series.length <= 60 ? series : [])
      .join("circle")
      .attr("class", "point")
      .attr("cx", (p) => x(p.step))
      .attr("cy", (p) => y(p.best))
      .attr("r", 2.5);
  }
  return summary;
}
