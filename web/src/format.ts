// How numbers, money, tokens, times and ids are written everywhere in the dashboard.

export function shortId(id: string, length = 10): string {
  return id.slice(0, length);
}

export function score(value: number | null | undefined): string {
  return value === null || value === undefined ? "—" : value.toFixed(2);
}

export function percent(value: number): string {
  return `${Math.round(value * 100)}%`;
}

export function usd(value: number): string {
  if (value === 0) return "$0";
  if (value < 0.01) return `$${value.toFixed(4)}`;
  if (value < 100) return `$${value.toFixed(2)}`;
  return `$${Math.round(value).toLocaleString("en")}`;
}

const compact = new Intl.NumberFormat("en", { notation: "compact", maximumFractionDigits: 1 });

export function tokens(value: number): string {
  return value < 10_000 ? value.toLocaleString("en") : compact.format(value);
}

export function integer(value: number): string {
  return value.toLocaleString("en");
}

export function duration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, "0")}s`;
  const hours = Math.floor(m / 60);
  return `${hours}h ${String(m % 60).padStart(2, "0")}m`;
}

/** The API writes UTC times; SQLite drops the zone, so a time without one is UTC. */
export function parseTime(text: string): Date {
  const zoned = /(Z|[+-]\d\d:?\d\d)$/.test(text) ? text : `${text}Z`;
  return new Date(zoned);
}

export function dateTime(text: string | null | undefined): string {
  if (!text) return "—";
  const date = parseTime(text);
  return date.toLocaleString("en-GB", {
    year: "numeric",
    month: "short",
    day: "numeric",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
}

export function plural(count: number, one: string, many = `${one}s`): string {
  return `${integer(count)} ${count === 1 ? one : many}`;
}

/** "0.60 [0.23, 0.88], 3/5": a score with its 95% interval and the counts behind it. */
export function estimate(e: { value: number; low: number; high: number; resolved: number; total: number }): string {
  return `${score(e.value)} ${interval(e)}`;
}

/** "[0.23, 0.88], 3/5": the part of `estimate` after the score itself. */
export function interval(e: { low: number; high: number; resolved: number; total: number }): string {
  return `[${score(e.low)}, ${score(e.high)}], ${e.resolved}/${e.total}`;
}
