// The admin token: asked for once, kept in localStorage, sent as a Bearer token.

import { h } from "./dom";

const KEY = "clade.token";
let pending: Promise<string | null> | null = null;
const listeners = new Set<() => void>();

export function getToken(): string | null {
  try {
    return window.localStorage.getItem(KEY);
  } catch {
    return null; // storage disabled: ask every time
  }
}

export function setToken(token: string | null): void {
  try {
    if (token) window.localStorage.setItem(KEY, token);
    else window.localStorage.removeItem(KEY);
  } catch {
    // storage disabled: the token lives for this request only
  }
  listeners.forEach((listener) => listener());
}

export function authHeaders(): Record<string, string> {
  const token = getToken();
  return token ? { Authorization: `Bearer ${token}` } : {};
}

/** Open the token dialog (once, however many callers ask at the same time). */
export function askForToken(reason: string): Promise<string | null> {
  pending ??= showDialog(reason).finally(() => (pending = null));
  return pending;
}

function showDialog(reason: string): Promise<string | null> {
  return new Promise((resolve) => {
    const input = h("input", {
      id: "token-input",
      type: "password",
      autocomplete: "off",
      spellcheck: "false",
      required: true,
      "aria-describedby": "token-help",
    });
    const dialog = h(
      "dialog",
      { class: "token-dialog", "aria-labelledby": "token-title" },
      h(
        "form",
        { method: "dialog" },
        h("h2", { id: "token-title" }, "Admin token"),
        h("p", { id: "token-help" }, reason),
        h(
          "p",
          { class: "muted" },
          "It is kept in this browser (localStorage) and sent with every request. " +
            "Find it in <data dir>/secrets.json as admin_token, or in CLADE_ADMIN_TOKEN.",
        ),
        h("label", { for: "token-input" }, "Token"),
        input,
        h(
          "div",
          { class: "actions" },
          h("button", { type: "submit", value: "save", class: "primary" }, "Save token"),
          h("button", { type: "submit", value: "cancel", formnovalidate: true }, "Cancel"),
        ),
      ),
    );
    dialog.addEventListener("close", () => {
      const token = dialog.returnValue === "save" ? input.value.trim() : "";
      dialog.remove();
      if (token) setToken(token);
      resolve(token || null);
    });
    document.body.append(dialog);
    dialog.showModal();
    input.focus();
  });
}

/** The header's control: shows whether a token is kept, and sets or forgets it. */
export function tokenControl(): HTMLElement {
  const button = h("button", { type: "button", class: "token-button" });
  const render = (): void => {
    const has = getToken() !== null;
    button.textContent = has ? "Forget token" : "Set admin token";
    button.title = has ? "An admin token is kept in this browser" : "Needed to start, pause, resume or cancel runs";
  };
  button.addEventListener("click", () => {
    if (getToken() !== null) setToken(null);
    else void askForToken("Paste the service's admin token to start and steer runs.");
  });
  listeners.add(render);
  render();
  return button;
}
