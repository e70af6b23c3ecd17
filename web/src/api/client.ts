// Typed calls to the service: paths, parameters and answers come from the generated schema,
// so a renamed route or field breaks the build instead of the page.

import { askForToken, authHeaders, getToken } from "../auth";
import type { paths } from "./schema";
import type { ValidationIssue } from "./types";

type Method = "get" | "post";
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
type Content<R> = R extends { content: { "application/json": infer J } }
  ? J
  : R extends { content: { "text/plain": infer T } }
    ? T
    : unknown;
type Success<O> = O extends { responses: infer R }
  ? R extends { 200: infer OK }
    ? Content<OK>
    : R extends { 201: infer Created }
      ? Content<Created>
      : unknown
  : never;
type PathParams<O> = O extends { parameters: { path: infer P } } ? P : never;
type QueryParams<O> = O extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;
type Body<O> = O extends { requestBody: { content: { "application/json": infer B } } } ? B : never;

export interface Options<O> {
  path?: PathParams<O>;
  query?: QueryParams<O>;
  body?: Body<O>;
  /** A write: ask for the admin token before sending if none is kept. */
  admin?: boolean;
  signal?: AbortSignal;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly issues: ValidationIssue[] = [],
  ) {
    super(message);
  }
}

export function url(path: string, params: object = {}, query: object = {}): string {
  const filled = path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = (params as Record<string, unknown>)[name];
    if (value === undefined) throw new Error(`missing path parameter ${name} for ${path}`);
    return encodeURIComponent(typeof value === "string" ? value : JSON.stringify(value));
  });
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined && value !== null) search.set(key, String(value));
  }
  const qs = search.toString();
  return qs ? `${filled}?${qs}` : filled;
}

async function failure(response: Response): Promise<ApiError> {
  let detail: unknown = response.statusText;
  try {
    detail = ((await response.json()) as { detail?: unknown }).detail ?? detail;
  } catch {
    // not JSON: keep the status text
  }
  if (Array.isArray(detail)) {
    const issues = detail as ValidationIssue[];
    return new ApiError(response.status, issues.map((i) => i.msg).join("; "), issues);
  }
  return new ApiError(response.status, typeof detail === "string" ? detail : JSON.stringify(detail));
}

/** fetch with the kept token; on a 401 ask for the token once and try again. */
export async function send(input: string, init: RequestInit = {}, admin = false): Promise<Response> {
  if (admin && getToken() === null) {
    const token = await askForToken("This action changes the archive and needs the admin token.");
    if (token === null) throw new ApiError(401, "no admin token given");
  }
  const attempt = (): Promise<Response> =>
    fetch(input, { ...init, headers: { ...(init.headers as Record<string, string>), ...authHeaders() } });
  let response = await attempt();
  if (response.status === 401) {
    const token = await askForToken(
      getToken() === null ? "This needs a token." : "The service refused the kept token. Paste a valid one.",
    );
    if (token !== null) response = await attempt();
  }
  if (!response.ok) throw await failure(response);
  return response;
}

export async function api<P extends keyof paths, M extends Method>(
  method: M,
  path: P,
  options: Options<Operation<P, M>> = {},
): Promise<Success<Operation<P, M>>> {
  const init: RequestInit = { method: method.toUpperCase() };
  if (options.signal) init.signal = options.signal;
  if (options.body !== undefined) {
    init.body = JSON.stringify(options.body);
    init.headers = { "Content-Type": "application/json" };
  }
  const response = await send(url(path, options.path ?? {}, options.query ?? {}), init, options.admin ?? false);
  const type = response.headers.get("content-type") ?? "";
  return (type.includes("json") ? await response.json() : await response.text()) as Success<Operation<P, M>>;
}

/** Download an export through fetch (so the token goes along) and save it under its own name. */
export async function download(path: string, fallbackName = "download"): Promise<void> {
  const response = await send(path);
  const disposition = response.headers.get("content-disposition") ?? "";
  const name = /filename="([^"]+)"/.exec(disposition)?.[1] ?? fallbackName;
  const href = URL.createObjectURL(await response.blob());
  const link = Object.assign(document.createElement("a"), { href, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  window.setTimeout(() => URL.revokeObjectURL(href), 10_000);
}
