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
      expect(short.body).toMatchObject({ format: 'mp3', sampleRate: 22050, voice: 'espeak-ng' });
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
      const refused = await say(outsider.token, { convId, msgId: messages['short'] });
      expect([refused.status, refused.body.error]).toEqual([403, 'not_conversation_member']);
      const noConversation = await say(owner.token, { convId: crypto.randomUUID(), msgId: messages['short'] });
      expect([noConversation.status, noConversation.body.error]).toEqual([404, 'conversation_not_found']);
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
