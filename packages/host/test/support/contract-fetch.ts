import type { ContractValidator } from '@trellis/test-support';

/**
 * A `fetch` for third-party clients (the `openai` SDK, the AI SDK, the MCP SDK) that checks every
 * response against the host's `/openapi.json` before the client reads it: a streamed answer by
 * its status and content type, any other by its body too (read from a clone).
 */
export function contractFetch(contract: ContractValidator, seen: { count: number } = { count: 0 }): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const response = await fetch(request);
    const type = response.headers.get('content-type');
    const streamed = /text\/event-stream|application\/x-ndjson/.test(type ?? '');
    const text = streamed ? null : await response.clone().text();
    await contract.check(request.method, new URL(request.url).pathname, response.status, type, text);
    seen.count++;
    return response;
  };
}
