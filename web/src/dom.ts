// A small element builder: text always goes in as text (never parsed as HTML).

export type Child = Node | string | number | null | undefined | false;
export type Children = Child | readonly Children[];
type Handler = (event: Event) => void;
export type Props = Record<string, string | number | boolean | null | undefined | Handler>;

const PROPERTIES = new Set(["value", "checked", "disabled", "hidden", "selected", "open", "tabIndex"]);

function apply(el: Element, props: Props): void {
  for (const [key, value] of Object.entries(props)) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (PROPERTIES.has(key)) {
      (el as unknown as Record<string, unknown>)[key] = value;
    } else if (key === "text") {
      el.textContent = String(value);
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
}

// Array.isArray does not narrow readonly arrays, so this guard does.
function isList(children: Children): children is readonly Children[] {
  return Array.isArray(children);
}

function append(el: Element, children: readonly Children[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (isList(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props?: Props | null,
  ...children: Children[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  if (props) apply(el, props);
  append(el, children);
  return el;
}

export function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  props?: Props | null,
  ...children: Children[]
): SVGElementTagNameMap[K] {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  if (props) apply(el, props);
  append(el, children);
  return el;
}

/** Replace an element's content. */
export function fill(el: Element, ...children: Children[]): void {
  el.replaceChildren();
  append(el, children);
}

let announceTimer = 0;

/** Say something to screen readers through the page's live region. */
export function announce(text: string): void {
  const region = document.getElementById("announcer");
  if (!region) return;
  window.clearTimeout(announceTimer);
  region.textContent = "";
  announceTimer = window.setTimeout(() => (region.textContent = text), 50);
}

/** A page section with a heading; `level` 2 unless given. */
export function section(title: string, ...children: Children[]): HTMLElement {
  return h("section", { class: "panel" }, h("h2", null, title), ...children);
}

export function errorBox(message: string): HTMLElement {
  return h("p", { class: "error-box", role: "alert" }, message);
}

/**
 * Re-render `container` without losing the keyboard user's place: the focused element is
 * found again after `update` by its `data-key` (or link target) and focused.
 */
export function keepFocus(container: Element, update: () => void): void {
  const active = document.activeElement;
  let selector: string | null = null;
  if (active instanceof HTMLElement && container.contains(active)) {
    const key = active.closest("[data-key]")?.getAttribute("data-key");
    const own = active.getAttribute("data-action") ?? active.getAttribute("href");
    const scope = key ? `[data-key="${CSS.escape(key)}"] ` : "";
    if (own !== null) {
      const attr = active.hasAttribute("data-action") ? "data-action" : "href";
      selector = `${scope}[${attr}="${CSS.escape(own)}"]`;
    }
  }
  update();
  if (selector) container.querySelector<HTMLElement>(selector)?.focus();
}
