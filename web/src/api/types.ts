// Names for the generated API shapes (src/api/schema.d.ts, made from the service's OpenAPI).

import type { components, paths } from "./schema";

type Schemas = components["schemas"];

export type RunPublic = Schemas["RunPublic"];
export type RunDetail = Schemas["RunDetail"];
export type RunConfig = Schemas["RunConfig-Output"];
export type RunStatus = RunPublic["status"];
export type MemberStatus = Schemas["RunAgentPublic"]["status"];
export type EvaluationStatus = EvaluationPublic["status"];
export type Budget = Schemas["Budget"];
export type LineageNode = Schemas["LineageNode"];
export type RunAgent = Schemas["RunAgentPublic"];
export type Lineage = Schemas["Lineage"];
export type LiveLineage = Schemas["LiveLineage"];
export type AgentDetail = Schemas["AgentDetail"];
export type AgentInRun = Schemas["AgentInRun"];
export type EvaluationPublic = Schemas["EvaluationPublic"];
export type EvaluationDetail = Schemas["EvaluationDetail"];
export type EvaluationResult = NonNullable<EvaluationDetail["result"]>;
export type RunUsage = Schemas["RunUsage"];
export type ValidationIssue = Schemas["ValidationIssue"];
export type AgentTransfer = Schemas["AgentTransfer"];
export type TransferRow = Schemas["TransferRow"];

type EventsAnswer = paths["/api/runs/{run_id}/events"]["get"]["responses"][200]["content"]["application/json"];
/** One entry of `/api/runs/{id}/events`: a union discriminated by `kind` (contracts/events.py). */
export type RunEvent = EventsAnswer[number];
export type EventKind = RunEvent["kind"];

/** The envelope every event has: a newer service may send a kind this build does not know. */
export function isRunEvent(value: unknown): value is RunEvent {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.id === "number" && typeof v.kind === "string" && typeof v.payload === "object";
}
