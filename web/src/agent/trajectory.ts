// An agent's trajectory: the conversation it had with its model, message by message.
// Trajectories are the agent's own output: shown as text, never trusted as markup.

import { h } from "../dom";

interface Message {
  role?: unknown;
  content?: unknown;
  tool_calls?: unknown;
}

function text(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) {
    return (value as unknown[])
      .map((part) => (typeof part === "object" && part && "text" in part ? text(part.text) : JSON.stringify(part)))
      .join("\n");
  }
  return value === null || value === undefined ? "" : JSON.stringify(value, null, 1);
}

// Roles the stylesheet knows; any other value the agent wrote gets the neutral class (its role
// becomes no class name of its own choosing).
const KNOWN_ROLES = new Set(["system", "developer", "user", "assistant", "tool", "function"]);

export function roleClass(role: unknown): string {
  return typeof role === "string" && KNOWN_ROLES.has(role) ? `role-${role}` : "role-other";
}

function toolCalls(value: unknown): HTMLElement | null {
  if (!Array.isArray(value) || value.length === 0) return null;
  return h(
    "ul",
    { class: "tool-calls" },
    value.map((call: unknown) => {
      const fn = (call as { function?: { name?: unknown; arguments?: unknown } }).function ?? {};
      let args = text(fn.arguments);
      try {
        const parsed = JSON.parse(args) as { command?: unknown };
        if (typeof parsed.command === "string") args = parsed.command;
      } catch {
        // not JSON: show as sent
      }
      return h("li", null, h("span", { class: "tool-name" }, `${text(fn.name) || "tool"} `), h("code", null, args));
    }),
  );
}

export function renderTrajectory(trajectory: unknown): HTMLElement {
  if (trajectory === null || trajectory === undefined) return h("p", { class: "muted" }, "No trajectory was recorded.");
  const record = trajectory as {
    messages?: unknown;
    exit_reason?: unknown;
    model?: unknown;
    usage?: unknown;
    error?: unknown;
  };
  if (!Array.isArray(record.messages)) {
    return h("pre", { class: "log" }, JSON.stringify(trajectory, null, 1));
  }
  const usage = record.usage as { total_tokens?: number; model_calls?: number } | undefined;
  const facts = [
    record.model ? `model ${text(record.model)}` : null,
    record.exit_reason ? `exit: ${text(record.exit_reason)}` : null,
    usage?.model_calls !== undefined ? `${usage.model_calls} model calls` : null,
    usage?.total_tokens !== undefined ? `${usage.total_tokens} tokens` : null,
  ].filter(Boolean);
  return h(
    "div",
    { class: "trajectory" },
    h("p", { class: "muted" }, facts.join(" · ")),
    record.error ? h("p", { class: "error-box" }, text(record.error)) : null,
    h(
      "ol",
      { class: "messages" },
      (record.messages as Message[]).map((m) =>
        h(
          "li",
          { class: `message ${roleClass(m.role)}` },
          h("span", { class: "role" }, text(m.role)),
          text(m.content) ? h("pre", { class: "content" }, text(m.content)) : null,
          toolCalls(m.tool_calls),
        ),
      ),
    ),
  );
}
