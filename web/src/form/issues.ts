// Put the server's 422 issues where they belong: at the field their `loc` names, else at the
// nearest enclosing group, else in the summary at the top of the form.

import type { ValidationIssue } from "../api/types";
import { h } from "../dom";

export function clearIssues(form: HTMLElement): void {
  form.querySelectorAll(".field-error").forEach((el) => el.remove());
  form.querySelectorAll("[aria-invalid]").forEach((el) => {
    el.removeAttribute("aria-invalid");
    const describedBy = (el.getAttribute("aria-describedby") ?? "")
      .split(" ")
      .filter((id) => id && !id.startsWith("error-"))
      .join(" ");
    if (describedBy) el.setAttribute("aria-describedby", describedBy);
    else el.removeAttribute("aria-describedby");
  });
  form.querySelectorAll(".invalid").forEach((el) => el.classList.remove("invalid"));
  form.querySelector(".error-summary")?.replaceChildren();
  form.querySelector(".error-summary")?.setAttribute("hidden", "");
}

/** "body.stages.0.subset" -> the element with data-path="stages.0.subset" or its nearest ancestor. */
export function targetFor(form: HTMLElement, path: string[]): { element: HTMLElement; path: string } | null {
  for (let length = path.length; length > 0; length--) {
    const candidate = path.slice(0, length).join(".");
    const element = form.querySelector<HTMLElement>(`[data-path="${CSS.escape(candidate)}"]`);
    if (element) return { element, path: candidate };
  }
  return null;
}

let counter = 0;

function markInvalid(element: HTMLElement, message: string): string {
  const id = `error-${++counter}`;
  const note = h("p", { class: "field-error", id }, message);
  if (element instanceof HTMLFieldSetElement) {
    element.classList.add("invalid");
    const legend = element.querySelector(":scope > legend");
    if (legend) legend.after(note);
    else element.prepend(note);
    return id;
  }
  element.setAttribute("aria-invalid", "true");
  const describedBy = [element.getAttribute("aria-describedby"), id].filter(Boolean).join(" ");
  element.setAttribute("aria-describedby", describedBy);
  element.closest(".field")?.classList.add("invalid");
  (element.closest(".field") ?? element).append(note);
  return element.id;
}

/** Show the issues; returns how many found a field or group. Focus goes to the summary. */
export function showIssues(
  form: HTMLElement,
  issues: ValidationIssue[],
  rename: (path: string[]) => string[] = (p) => p,
): number {
  clearIssues(form);
  const summary = form.querySelector<HTMLElement>(".error-summary");
  const items: HTMLElement[] = [];
  let placed = 0;
  for (const issue of issues) {
    const path = rename(issue.loc.map(String).filter((part, i) => !(i === 0 && part === "body")));
    const where = path.join(".") || "configuration";
    const target = targetFor(form, path);
    const message = target && target.path !== path.join(".") ? `${where}: ${issue.msg}` : issue.msg;
    if (target) {
      placed++;
      const focusId = markInvalid(target.element, message);
      const link = h("a", { href: `#${focusId}` }, `${where}: ${issue.msg}`);
      link.addEventListener("click", (event) => {
        event.preventDefault();
        const field = document.getElementById(focusId) ?? target.element;
        field.focus();
      });
      items.push(h("li", null, link));
    } else {
      items.push(h("li", null, `${where}: ${issue.msg}`));
    }
  }
  if (summary) {
    summary.replaceChildren(
      h(
        "h2",
        null,
        issues.length === 1 ? "The service refused one value" : `The service refused ${issues.length} values`,
      ),
      h("ul", null, items),
    );
    summary.removeAttribute("hidden");
    summary.focus();
  }
  return placed;
}
