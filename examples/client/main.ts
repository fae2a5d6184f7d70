/**
 * @trellis/client from start to end: sign up, create a project and a workflow block, deploy it,
 * run the deployment while following its events (resumed after a drop by the client), and watch a
 * deployment token call it. Against a server at TRELLIS_URL, or one started in this process.
 *
 *   pnpm --filter @trellis-examples/client start          (TRELLIS_URL=http://127.0.0.1:3000 to use yours)
 */
import { pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import { createTrellisClient, type WebSocketConstructor } from '@trellis/client';
import { createHost } from '@trellis/host';

const workflow = {
  type: 'doc',
  content: [
    { type: 'inputBlock', attrs: { id: 'in-topic', name: 'topic', type: 'string', required: true } },
    { type: 'codeBlock', attrs: { id: 'code-words', name: 'words', language: 'javascript' }, content: [{ type: 'text', text: "const words = inputs.topic.split(' ');\nfor (const w of words) emit(w + ' ');\nreturn words.length;" }] },
    { type: 'outputBlock', attrs: { id: 'out-summary', name: 'summary' }, content: [{ type: 'text', text: '{{ words }} words about {{ topic }}' }] },
  ],
};

export interface ExampleResult {
  streamed: string;
  output: unknown;
  events: string[];
  channelEpoch: string | undefined;
}

export async function runClientExample(baseUrl: string, log: (line: string) => void = console.log): Promise<ExampleResult> {
  // Sign up with the typed API (every operation of /openapi.json, checked by TypeScript).
  const anonymous = createTrellisClient({ baseUrl });
  const email = `example-${Date.now()}@example.com`;
  const signup = await anonymous.api.POST('/auth/register', { body: { email, password: 'correct horse battery' } });
  if (!signup.data) throw new Error(`sign-up failed: ${JSON.stringify(signup.error)}`);
  const client = createTrellisClient({ baseUrl, token: signup.data.token });

  const project = await client.api.POST('/project', { body: { name: 'Client example', tools: [], access: 'private' } });
  const block = await client.api.POST('/block/{projectId}', { params: { path: { projectId: project.data!.id } }, body: { name: 'Word counter', type: 'workflow', content: workflow } });
  const deployed = await client.api.POST('/block/{blockId}/deploy', { params: { path: { blockId: block.data!.id } }, body: { access: 'token' } });
  log(`deployed block ${block.data!.id} as version ${deployed.data!.version.version}`);

  // The user channel: pushes to this user (conversation output, credit notices), resumed after drops.
  const channel = client.userChannel({ WebSocket: WebSocket as unknown as WebSocketConstructor });
  await channel.connect();
  channel.on('system', (push) => log(`notice: ${push.type}`));

  // Run the deployment with its token and follow the events to the end.
  const runner = createTrellisClient({ baseUrl });
  let streamed = '';
  let output: unknown;
  const events: string[] = [];
  for await (const event of runner.runDeployment(block.data!.id, { inputs: { topic: 'gardens in the spring' }, deploymentToken: deployed.data!.deploymentToken! })) {
    events.push(event.type);
    if (event.type === 'block_chunk') streamed += event.data.delta;
    if (event.type === 'run_complete') output = event.data.globalCtx.find((entry: { name: string }) => entry.name === 'summary')?.value;
  }
  log(`streamed: ${streamed.trim()}`);
  log(`output: ${String(output)}`);
  const epoch = channel.epoch;
  channel.close();
  return { streamed, output, events, channelEpoch: epoch };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const external = process.env.TRELLIS_URL;
  const host = external ? null : createHost({ config: { server: { port: 0, host: '127.0.0.1' }, auth: { jwtSecret: 'example-secret-example-secret-0123456' }, database: { url: 'sqlite::memory:' } } });
  if (host) await host.start();
  try {
    await runClientExample(external ?? host!.url);
  } finally {
    await host?.stop();
  }
}
