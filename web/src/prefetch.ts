// The request index.html starts before the app's code has loaded (a run page's lineage).

interface Prefetched {
  path: string;
  response: Promise<Response>;
}

/** The JSON answer to `path` if index.html already asked for it (once); null to ask anew. */
export async function takePrefetched(path: string): Promise<unknown> {
  const holder = window as unknown as { cladePrefetch?: Prefetched };
  const prefetched = holder.cladePrefetch;
  if (!prefetched || prefetched.path !== path) return null;
  delete holder.cladePrefetch;
  try {
    const response = await prefetched.response;
    return response.ok ? ((await response.json()) as unknown) : null;
  } catch {
    return null; // the service was not there: the ordinary call reports it
  }
}
