import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EntityManager } from '@mikro-orm/core';
import { Conversation, coreModules, Message, User } from '@trellis/core';
import { startTestHost, testDatabases, transports, type TestHost } from '@trellis/test-support';
import { MPEGDecoder } from 'mpg123-decoder';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// POST /tool/speech with the host's eSpeak NG synthesizer, on both transports and both databases.
// Messages are the conversations area's own records, read by the tool service's message lookup.
const userMessage = (em: EntityManager, conversation: Conversation, authorId: string, content: string) =>
  em.create(Message, {
    id: crypto.randomUUID(),
    conversation,
    role: 'user',
    content,
    status: 'completed',
    authorId,
    attrs: {},
    toolCalls: null,
    toolCallId: null,
    toolName: null,
    usage: null,
    error: null,
    debug: null,
  } as unknown as Message);

async function decode(base64: string) {
  const decoder = new MPEGDecoder();
  await decoder.ready;
  try {
    return decoder.decode(new Uint8Array(Buffer.from(base64, 'base64')));
  } finally {
    decoder.free();
  }
}

const rms = (samples: Float32Array) => Math.sqrt(samples.reduce((sum, x) => sum + x * x, 0) / samples.length);

describe.each(testDatabases())('tool service speech on $name', (db) => {
  describe.each(transports)('over %s', (transport) => {
    let t: TestHost;
    let owner: { token: string; userId: string };
    let member: { token: string; userId: string };
    let outsider: { token: string; userId: string };
    let convId: string;
    const messages: Record<string, string> = {};
    const say = (token: string, body: unknown) => t.request('POST', '/tool/speech', { token, body });

    beforeAll(async () => {
      t = await startTestHost(db, transport, { modules: coreModules, config: { tools: { speech: { maxTextLength: 300, maxSentenceLength: 40 } } } });
      [owner, member, outsider] = [await t.register(), await t.register(), await t.register()];
      const em = t.kernel.fork();
      const ids = () => crypto.randomUUID();
      const conversation = em.create(Conversation, { id: ids(), owner: em.getReference(User, owner.userId), name: 'Chat', bot: null, conf: {}, members: [owner.userId, member.userId] } as Conversation);
      convId = conversation.id;
      const texts = {
        short: '你好，欢迎使用。',
        long: '今天的天气很好，我们一起去公园散步吧。公园里有很多花，红的、黄的、紫的，非常漂亮。傍晚的时候，我们在湖边看日落，然后回家吃晚饭。',
        tooLong: '这是一个很长的句子。'.repeat(40),
        empty: '。。。',
      };
      for (const [key, content] of Object.entries(texts)) {
        const message = userMessage(em, conversation, owner.userId, content);
        messages[key] = message.id;
      }
      await em.flush();
    });
    afterAll(() => t?.close());

    it('speaks a message as MP3 that an independent decoder reads as speech of the right length', async () => {
      const short = await say(owner.token, { convId, msgId: messages['short'] });
      expect(short.status, short.text).toBe(200);
      // The answer names the voice that spoke, not the engine.
      expect(short.body).toMatchObject({ format: 'mp3', sampleRate: 22050, voice: 'cmn+f3' });
      const long = await say(member.token, { convId, msgId: messages['long'] });
      expect(long.status, long.text).toBe(200);
      for (const [response, characters] of [[short, 8], [long, 64]] as const) {
        const decoded = await decode(response.body.audio);
        expect(decoded.errors).toEqual([]);
        expect(decoded.sampleRate).toBe(22050);
        const seconds = decoded.samplesDecoded / decoded.sampleRate;
        // Mandarin at 160 words per minute: roughly 0.1 to 0.5 s per character, pauses included.
        expect(seconds).toBeGreaterThan(characters * 0.1);
        expect(seconds).toBeLessThan(characters * 0.5 + 1);
        expect(seconds).toBeCloseTo(response.body.duration, 0);
        expect(rms(decoded.channelData[0]!)).toBeGreaterThan(0.01);
      }
      // The long message was split into pieces of at most 40 characters, and all of it was spoken.
      const shortSeconds = (await decode(short.body.audio)).samplesDecoded / 22050;
      const longSeconds = (await decode(long.body.audio)).samplesDecoded / 22050;
      expect(longSeconds).toBeGreaterThan(shortSeconds * 4);
    });

    it('speaks only for members of the conversation, and answers 404 for unknown conversations and messages', async () => {
      // An outsider cannot tell an existing conversation from a missing one.
      const refused = await say(outsider.token, { convId, msgId: messages['short'] });
      const noConversation = await say(owner.token, { convId: crypto.randomUUID(), msgId: messages['short'] });
      const outsiderMissing = await say(outsider.token, { convId: crypto.randomUUID(), msgId: messages['short'] });
      expect([refused.status, refused.body]).toEqual([404, noConversation.body]);
      expect([noConversation.status, noConversation.body.error]).toEqual([404, 'conversation_not_found']);
      expect(outsiderMissing.body).toEqual(refused.body);
      const noMessage = await say(owner.token, { convId, msgId: crypto.randomUUID() });
      expect([noMessage.status, noMessage.body.error]).toEqual([404, 'message_not_found']);
      expect((await t.request('POST', '/tool/speech', { body: { convId, msgId: messages['short'] } })).status).toBe(401);
    });

    it('answers 400 for missing fields and too long texts, 422 for a message with nothing to say', async () => {
      for (const body of [{}, { convId }, { msgId: messages['short'] }, { convId: 1, msgId: 'x' }]) {
        const r = await say(owner.token, body);
        expect([r.status, r.body.error], JSON.stringify(body)).toEqual([400, 'validation_failed']);
      }
      const tooLong = await say(owner.token, { convId, msgId: messages['tooLong'] });
      expect([tooLong.status, tooLong.body.error]).toEqual([400, 'speech_text_too_long']);
      const empty = await say(owner.token, { convId, msgId: messages['empty'] });
      expect([empty.status, empty.body.error]).toEqual([422, 'speech_empty_text']);
    });
  });

  it('answers speech_not_configured without a synthesizer', async () => {
    const t = await startTestHost(db, 'node', { config: { adapters: { speech: { provider: 'none' } } } });
    try {
      const user = await t.register();
      const em = t.kernel.fork();
      const conversation = em.create(Conversation, { id: crypto.randomUUID(), owner: em.getReference(User, user.userId), name: 'Chat', bot: null, conf: {}, members: [user.userId] } as Conversation);
      await em.flush();
      // Membership is checked first, then the message.
      const r = await t.request('POST', '/tool/speech', { token: user.token, body: { convId: conversation.id, msgId: crypto.randomUUID() } });
      expect([r.status, r.body.error]).toEqual([404, 'message_not_found']);
    } finally {
      await t.close();
    }
    const t2 = await startTestHost(db, 'node', { modules: coreModules, config: { adapters: { speech: { provider: 'none' } } } });
    try {
      const user = await t2.register();
      const em = t2.kernel.fork();
      const conversation = em.create(Conversation, { id: crypto.randomUUID(), owner: em.getReference(User, user.userId), name: 'Chat', bot: null, conf: {}, members: [user.userId] } as Conversation);
      const message = userMessage(em, conversation, user.userId, '你好。');
      await em.flush();
      const r = await t2.request('POST', '/tool/speech', { token: user.token, body: { convId: conversation.id, msgId: message.id } });
      expect([r.status, r.body.error]).toEqual([503, 'speech_not_configured']);
    } finally {
      await t2.close();
    }
  });
});

/**
 * An espeak-ng stand-in that runs the real program but first logs the text it was given and waits
 * until the test opens a gate (a file), so the test sees which pieces run at once and in what order.
 */
function gatedEspeak() {
  const dir = mkdtempSync(join(tmpdir(), 'trellis-espeak-'));
  const program = join(dir, 'espeak-ng');
  const log = join(dir, 'log');
  const gate = join(dir, 'go');
  writeFileSync(
    program,
    `#!/bin/sh
case "$1" in --version) exec espeak-ng --version ;; esac
text=$(cat)
echo "start $text" >> '${log}'
while [ ! -e '${gate}' ]; do sleep 0.02; done
printf '%s' "$text" | espeak-ng "$@"
code=$?
echo "end $text" >> '${log}'
exit $code
`,
  );
  chmodSync(program, 0o755);
  const lines = () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []);
  return {
    program,
    lines,
    starts: () => lines().filter((line) => line.startsWith('start ')).map((line) => line.slice(6)),
    /** The most pieces that ran at once. */
    peak: () => {
      let running = 0;
      let peak = 0;
      for (const line of lines()) {
        running += line.startsWith('start ') ? 1 : -1;
        peak = Math.max(peak, running);
      }
      return peak;
    },
    open: () => writeFileSync(gate, ''),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe.each(testDatabases())('tool service speech load limits on $name', (db) => {
  const speak = async (t: TestHost, texts: string[]) => {
    const user = await t.register();
    const em = t.kernel.fork();
    const conversation = em.create(Conversation, { id: crypto.randomUUID(), owner: em.getReference(User, user.userId), name: 'Chat', bot: null, conf: {}, members: [user.userId] } as Conversation);
    const ids = texts.map((text) => userMessage(em, conversation, user.userId, text).id);
    await em.flush();
    return { ...user, say: (index = 0) => t.request('POST', '/tool/speech', { token: user.token, body: { convId: conversation.id, msgId: ids[index] } }) };
  };
  /** The first of several requests to settle (the others wait at the gate). */
  const first = <T>(requests: Array<Promise<T>>) => Promise.race(requests.map((request, index) => request.then((response) => ({ response, index }))));

  it('caps concurrent synthesis overall and per team, and answers 429 speech_busy with Retry-After beyond the queues', async () => {
    const espeak = gatedEspeak();
    const t = await startTestHost(db, 'uws', {
      modules: coreModules,
      config: { tools: { speech: { maxConcurrent: 2, maxConcurrentPerTeam: 1, maxQueuedPerTeam: 1, maxQueued: 1 } }, adapters: { speech: { provider: 'espeak', espeakPath: espeak.program } } },
    });
    try {
      const [a, b, c] = [await speak(t, ['你好。']), await speak(t, ['早上好。']), await speak(t, ['晚上好。'])];
      const a1 = a.say();
      await until(() => espeak.starts().length === 1);
      // Team a speaks one piece at a time and may have one request waiting: of two more, one is refused.
      const [a2, a3] = [a.say(), a.say()];
      const refused = await first([a2, a3]);
      expect([refused.response.status, refused.response.body.error]).toEqual([429, 'speech_busy']);
      expect(Number(refused.response.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      // Another team is not held up by team a's queue: the second slot is its.
      const b1 = b.say();
      await until(() => espeak.starts().length === 2);
      // Three requests in progress is everything the server admits (2 slots + 1 waiting).
      const c1 = await c.say();
      expect([c1.status, c1.body.error]).toEqual([429, 'speech_busy']);
      expect(c1.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(espeak.starts()).toHaveLength(2);
      espeak.open();
      const answered = await Promise.all([a1, refused.index === 0 ? a3 : a2, b1]);
      expect(answered.map((r) => r.status)).toEqual([200, 200, 200]);
      expect(espeak.peak()).toBe(2);
      // Once the queue drains, the team may ask again.
      expect((await a.say()).status).toBe(200);
    } finally {
      espeak.open();
      await t.close();
      espeak.remove();
    }
    // Four pieces synthesized and MP3-encoded after three registrations (see the next test).
  }, 120_000);

  it('gives a freed slot to the teams in turn, not to the team with the longest queue', async () => {
    const espeak = gatedEspeak();
    const t = await startTestHost(db, 'node', {
      modules: coreModules,
      config: { tools: { speech: { maxConcurrent: 1, maxConcurrentPerTeam: 1, maxQueuedPerTeam: 2, maxQueued: 3, maxSentenceLength: 20 } }, adapters: { speech: { provider: 'espeak', espeakPath: espeak.program } } },
    });
    try {
      const a = await speak(t, ['今天的天气很好，我们一起去公园散步吧。公园里有很多花，非常漂亮。', '你好。']);
      const [b, c] = [await speak(t, ['早上好。']), await speak(t, ['晚上好。'])];
      const long = a.say(0);
      await until(() => espeak.starts().length === 1);
      // Team a queues two more requests (a fourth is refused, which shows the others are waiting).
      const queued = [a.say(1), a.say(1), a.say(1)];
      const refusedA = await first(queued);
      expect(refusedA.response.status).toBe(429);
      // One of teams b and c gets the last place in the queue, after team a's requests.
      const others = [b.say(), c.say()];
      const refusedOther = await first(others);
      expect(refusedOther.response.status).toBe(429);
      const waiting = others[1 - refusedOther.index]!;
      espeak.open();
      const answers = await Promise.all([long, ...queued.filter((_, index) => index !== refusedA.index), waiting]);
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      const order = espeak.starts();
      // A first-come queue would start both of team a's waiting requests first; in turns, the
      // other team's piece starts right after team a's next one.
      expect(order.slice(0, 3)).toEqual(['今天的天气很好，我们一起去公园散步吧。', '你好。', refusedOther.index === 0 ? '晚上好。' : '早上好。']);
      expect(espeak.peak()).toBe(1);
    } finally {
      espeak.open();
      await t.close();
      espeak.remove();
    }
    // Five pieces synthesized and MP3-encoded one after the other (one slot), after three
    // registrations: 4 s quiet, 18 s with six busy loops on the two cores, over 30 s in a loaded
    // CI run (it failed there at the default 30 s).
  }, 120_000);
});
