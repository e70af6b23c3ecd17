// A drawing surface for the tree: SVG (every node an element) or canvas (for large trees).

import type { ZoomTransform } from "d3";
import type { Placed, Placement } from "./layout";
import type { Marks } from "./style";

export interface Surface {
  /** The element that takes pointer and zoom input. */
  readonly element: HTMLElement | SVGSVGElement;
  /** Draw a new placement (a new or updated lineage, or another layout). */
  draw(placement: Placement, marks: Marks): void;
  /** Only the marks changed (search matches). */
  mark(marks: Marks): void;
  /** The view moved (pan or zoom). */
  move(transform: ZoomTransform): void;
  /** The zoom gesture ended: a good moment for slower work such as labels. */
  settle(): void;
  /** The node under a pointer event, if any. */
  nodeAt(event: MouseEvent): Placed | null;
  destroy(): void;
}

/** The part of the layout in view, in layout coordinates. */
export function inView(placement: Placement, t: ZoomTransform, width: number, height: number): Placed[] {
  const [ax, ay] = t.invert([0, 0]);
  const [bx, by] = t.invert([width, height]);
  return placement.points.filter((p) => p.x >= ax && p.x <= bx && p.y >= ay && p.y <= by);
}
