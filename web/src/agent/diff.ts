// A unified diff with added and removed lines highlighted, a per-file summary, and a cap on
// how many lines are drawn at first (a seed's "diff" is its whole code).

import { h } from "../dom";
import * as fmt from "../format";

const FIRST_LINES = 2000;

interface FileStat {
  name: string;
  added: number;
  removed: number;
}

function lineClass(line: string): string {
  if (line.startsWith("diff --git") || line.startsWith("index ")) return "meta";
  if (line.startsWith("+++") || line.startsWith("---")) return "file";
  if (line.startsWith("@@")) return "hunk";
  if (line.startsWith("+")) return "add";
  if (line.startsWith("-")) return "del";
  return "ctx";
}

export function diffStats(text: string): FileStat[] {
  const files: FileStat[] = [];
  let current: FileStat | null = null;
  for (const line of text.split("\n")) {
    if (line.startsWith("+++ ")) {
      const name = line.slice(4).replace(/^b\//, "");
      current = { name: name === "/dev/null" ? "(deleted)" : name, added: 0, removed: 0 };
      files.push(current);
    } else if (line.startsWith("--- ") && current === null) {
      continue;
    } else if (current && line.startsWith("+")) current.added++;
    else if (current && line.startsWith("-") && !line.startsWith("--- ")) current.removed++;
    if (line.startsWith("diff --git")) current = null;
  }
  return files;
}

function lines(text: string, from: number, to: number): HTMLElement[] {
  return text
    .split("\n")
    .slice(from, to)
    .map((line) => h("span", { class: `diff-line ${lineClass(line)}` }, line || " "));
}

export function renderDiff(text: string, label: string): HTMLElement {
  if (!text.trim()) return h("p", { class: "muted" }, "No change.");
  const stats = diffStats(text);
  const total = text.split("\n").length;
  const added = stats.reduce((sum, f) => sum + f.added, 0);
  const removed = stats.reduce((sum, f) => sum + f.removed, 0);
  const code = h("code", null, lines(text, 0, FIRST_LINES));
  const pre = h("pre", { class: "diff", tabindex: 0, "aria-label": label }, code);
  const more =
    total > FIRST_LINES
      ? h("button", { type: "button", class: "small" }, `Show all ${fmt.integer(total)} lines`)
      : null;
  more?.addEventListener("click", () => {
    code.append(...lines(text, FIRST_LINES, total));
    more.remove();
  });
  return h(
    "div",
    { class: "diff-view" },
    h(
      "p",
      { class: "diff-summary" },
      `${fmt.plural(stats.length, "file")} changed, `,
      h("span", { class: "add-count" }, `+${fmt.integer(added)}`),
      " ",
      h("span", { class: "del-count" }, `−${fmt.integer(removed)}`),
    ),
    stats.length > 1
      ? h(
          "ul",
          { class: "diff-files" },
          stats.map((f) => h("li", null, h("code", null, f.name), ` +${f.added} −${f.removed}`)),
        )
      : null,
    pre,
    more,
  );
}
