// Names for the generated API shapes (src/api/schema.d.ts, made from the service's OpenAPI).

import type { components } from "./schema";

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

/** One entry of `/api/runs/{id}/events` (typed loosely by the API). */
export interface RunEvent {
  id: number;
  kind: string;
  payload: Record<string, unknown>;
  created_at: string;
}

export function isRunEvent(value: unknown): value is RunEvent {
  if (typeof value !== "object" || value === null) return false;
  const v = value as Record<string, unknown>;
  return typeof v.id === "number" && typeof v.kind === "string" && typeof v.payload === "object";
}
