// Small helpers shared by the benchmark scripts (not part of any package).

/**
 * One JSON request to a host under test; throws unless it answers 2xx. Answers the parsed body.
 * `token` goes in `Authorization: Bearer`; `body`, when given, is sent as JSON.
 */
export async function request(base, method, path, token, body) {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${path}: ${response.status} ${text.slice(0, 500)}`);
  return text ? JSON.parse(text) : undefined;
}

/**
 * Self time per function of a V8 `.cpuprofile` (what `Profiler.stop` answers), in microseconds,
 * keyed by "name file:line" (paths shortened to the package), with the total sampled time.
 */
export function selfTimes(profile) {
  const perNode = new Map();
  // The first delta is the time from the profile's start to its first sample, spent in whatever
  // started it (an inspector call), not in the sampled function: it is left out.
  for (let i = 1; i < profile.samples.length; i++) perNode.set(profile.samples[i], (perNode.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const self = new Map();
  let total = 0;
  for (const node of profile.nodes) {
    const t = perNode.get(node.id) ?? 0;
    total += t;
    const { functionName, url, lineNumber } = node.callFrame;
    const key = `${functionName || '(anonymous)'} ${url.replace(/^.*node_modules\//, '').replace(/^file:\/\/.*\/packages\//, '')}:${lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + t);
  }
  return { total, self: [...self].sort((a, b) => b[1] - a[1]) };
}
