// History routing: the service answers every page path with index.html, so URLs are real.

export type Cleanup = () => void;
export interface Route {
  params: Record<string, string>;
  query: URLSearchParams;
}
export type Page = (main: HTMLElement, route: Route) => Cleanup | void;

const table: [RegExp, Page][] = [];
let cleanup: Cleanup | void;
let main: HTMLElement;
let fallback: Page;

export function addRoute(pattern: string, page: Page): void {
  // "/runs/:id" -> ^/runs/(?<id>[^/]+)$
  const source = pattern.replace(/:(\w+)/g, (_, name: string) => `(?<${name}>[^/]+)`);
  table.push([new RegExp(`^${source}/?$`), page]);
}

export function navigate(href: string, replace = false): void {
  if (replace) history.replaceState(null, "", href);
  else history.pushState(null, "", href);
  render();
}

function render(moveFocus = true): void {
  if (cleanup) cleanup();
  main.replaceChildren();
  const { pathname, search } = window.location;
  const query = new URLSearchParams(search);
  for (const [pattern, page] of table) {
    const match = pattern.exec(pathname);
    if (match) {
      const params = Object.fromEntries(Object.entries(match.groups ?? {}).map(([k, v]) => [k, decodeURIComponent(v)]));
      cleanup = page(main, { params, query });
      if (moveFocus) focusHeading();
      return;
    }
  }
  cleanup = fallback(main, { params: {}, query });
}

function focusHeading(): void {
  // Pages write their <h1> synchronously: move focus there, as a full page load would.
  const heading = main.querySelector("h1");
  if (heading) {
    heading.setAttribute("tabindex", "-1");
    heading.focus({ preventScroll: true });
  }
  window.scrollTo(0, 0);
}

function isAppLink(link: HTMLAnchorElement, event: MouseEvent): boolean {
  if (event.defaultPrevented || event.button !== 0) return false;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return false;
  if (link.target || link.hasAttribute("download")) return false;
  const target = new URL(link.href, window.location.href);
  return target.origin === window.location.origin && !target.pathname.startsWith("/api/");
}

export function startRouter(root: HTMLElement, notFound: Page): void {
  main = root;
  fallback = notFound;
  document.addEventListener("click", (event) => {
    const link = (event.target as Element | null)?.closest?.("a");
    if (link instanceof HTMLAnchorElement && isAppLink(link, event)) {
      event.preventDefault();
      const target = new URL(link.href);
      navigate(target.pathname + target.search + target.hash);
    }
  });
  window.addEventListener("popstate", () => render());
  render(false);
}
