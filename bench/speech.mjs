#!/usr/bin/env node
// Speech synthesis and the event loop: eight 200-character pieces spoken at once by
// @trellis/speech-espeak (espeak-ng as a child process, MP3 encoded on a worker thread), against a
// baseline that encodes the same WAV with lamejs on the event loop (what the adapter did before).
// While they run, a timer measures how late the event loop answers (perf_hooks
// monitorEventLoopDelay): that lateness is what every other request of the process waits.
//
//   pnpm run build && node bench/speech.mjs [--pieces 8]
//
// Not a test: it prints figures and never fails on them. Needs espeak-ng (apt-get install espeak-ng).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { availableParallelism, loadavg } from 'node:os';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { EspeakSpeechSynthesizer, parseWav } from '@trellis/speech-espeak';

// lamejs is the adapter's dependency, not the bench's: load the same copy the adapter uses.
const lamejs = createRequire(import.meta.resolve('@trellis/speech-espeak')).resolve('@breezystack/lamejs').replace(/lamejs\.iife\.js$/, 'lamejs.js');
const { Mp3Encoder } = await import(pathToFileURL(lamejs).href);

const { values: args } = parseArgs({ options: { pieces: { type: 'string', default: '8' } } });
const pieces = Number(args.pieces);
const text = '今天的天气很好，我们一起去公园散步吧。公园里有很多花，红的、黄的、紫的，非常漂亮。傍晚的时候，我们在湖边看日落，然后回家吃晚饭。'.repeat(4).slice(0, 200);

if (!EspeakSpeechSynthesizer.isAvailable()) {
  console.log('espeak-ng is not installed: nothing to measure.');
  process.exit(0);
}

/** The baseline: espeak-ng, then lamejs on this thread, as the adapter did before. */
function inThread(input) {
  return new Promise((resolve, reject) => {
    const child = spawn('espeak-ng', ['-v', 'cmn+f3', '-s', '160', '-b', '1', '--stdout']);
    const out = [];
    child.stdout.on('data', (chunk) => out.push(chunk));
    child.on('error', reject);
    child.on('close', () => {
      const { sampleRate, samples } = parseWav(Buffer.concat(out));
      const encoder = new Mp3Encoder(1, sampleRate, 48);
      let bytes = 0;
      for (let at = 0; at < samples.length; at += 1152 * 16) bytes += encoder.encodeBuffer(samples.subarray(at, at + 1152 * 16)).length;
      bytes += encoder.flush().length;
      resolve({ bytes, seconds: samples.length / sampleRate });
    });
    child.stdin.end(input, 'utf8');
  });
}

async function measure(name, speak) {
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  const started = performance.now();
  const results = await Promise.all(Array.from({ length: pieces }, () => speak()));
  const wall = performance.now() - started;
  delay.disable();
  const audio = results.reduce((sum, r) => sum + r.seconds, 0);
  const ms = (ns) => (ns / 1e6).toFixed(0);
  console.log(`${name.padEnd(30)} wall ${(wall / 1000).toFixed(1)} s for ${audio.toFixed(0)} s of audio; event-loop delay p50 ${ms(delay.percentile(50))} ms, p99 ${ms(delay.percentile(99))} ms, max ${ms(delay.max)} ms`);
  return delay.percentile(99);
}

console.log(`${pieces} pieces of ${text.length} characters at once; ${availableParallelism()} cores, load ${loadavg()[0].toFixed(1)}`);
const synthesizer = new EspeakSpeechSynthesizer();
const baseline = await measure('baseline: lamejs on the loop', () => inThread(text));
const adapter = await measure('adapter: encoder thread', async () => {
  const audio = await synthesizer.synthesize(text, { language: 'zh' });
  return { seconds: audio.durationSeconds };
});
console.log(`p99 event-loop delay: x${(adapter / baseline).toFixed(3)} of the baseline`);
await synthesizer.close();
