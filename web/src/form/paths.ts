// Reading and writing nested values by dotted path ("budget.max_usd", "stages.0.subset").

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export function getPath(root: Json, path: string): Json | undefined {
  let node: Json | undefined = root;
  for (const part of path.split(".")) {
    if (node === null || typeof node !== "object") return undefined;
    node = Array.isArray(node) ? node[Number(part)] : node[part];
  }
  return node;
}

export function setPath(root: JsonObject, path: string, value: Json): void {
  const parts = path.split(".");
  let node: JsonObject | Json[] = root;
  parts.forEach((part, index) => {
    const last = index === parts.length - 1;
    const key: string | number = Array.isArray(node) ? Number(part) : part;
    const container = node as Record<string | number, Json>;
    if (last) {
      container[key] = value;
      return;
    }
    const next = container[key];
    if (next === null || typeof next !== "object" || next === undefined) {
      container[key] = /^\d+$/.test(parts[index + 1] ?? "") ? [] : {};
    }
    node = container[key] as JsonObject | Json[];
  });
}

/** Remove a path; empty objects left behind are removed too. */
export function deletePath(root: JsonObject, path: string): void {
  const parts = path.split(".");
  const trail: [Record<string, Json>, string][] = [];
  let node: Json = root;
  for (const part of parts) {
    if (node === null || typeof node !== "object" || Array.isArray(node)) return;
    trail.push([node, part]);
    node = node[part] ?? null;
  }
  for (let i = trail.length - 1; i >= 0; i--) {
    const [parent, key] = trail[i] as [Record<string, Json>, string];
    const child = parent[key];
    if (i === trail.length - 1) delete parent[key];
    else if (child && typeof child === "object" && !Array.isArray(child) && Object.keys(child).length === 0) {
      delete parent[key];
    }
  }
}

/** Deep merge: `over` wins; arrays are replaced whole. */
export function merge(base: JsonObject, over: JsonObject): JsonObject {
  const out: JsonObject = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prev = out[key];
    const bothObjects =
      prev &&
      value &&
      typeof prev === "object" &&
      typeof value === "object" &&
      !Array.isArray(prev) &&
      !Array.isArray(value);
    out[key] = bothObjects ? merge(prev, value) : value;
  }
  return out;
}
