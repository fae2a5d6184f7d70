import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { endianness } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { SpeechSynthesizer, SynthesizedAudio, SynthesizeOptions } from '@trellis/core';

export interface EspeakSpeechSynthesizerOptions {
  /** The espeak-ng program: a name on PATH or a path (default `espeak-ng`). */
  program?: string;
  /** eSpeak NG voice (default `cmn+f3`: Mandarin with the female variant f3). */
  voice?: string;
  /** Words per minute (default 160). */
  wordsPerMinute?: number;
  /** MP3 bit rate in kbit/s (default 48; mono speech). */
  bitRateKbps?: number;
  /** Longest text one call speaks (default 500 characters). */
  maxInputLength?: number;
  /** Milliseconds one espeak-ng run may take (default 30 000). */
  timeoutMs?: number;
  /**
   * Worker threads that encode MP3 (default 1). Encoding costs far more CPU than eSpeak NG itself
   * (seconds for a minute of audio), so it never runs on the event loop; calls beyond this many
   * wait for a thread.
   */
  encoderThreads?: number;
}

/**
 * SpeechSynthesizer on eSpeak NG. eSpeak NG is GPL-3.0, so this MIT package never links or bundles
 * it: it runs the `espeak-ng` program (Debian: `apt-get install espeak-ng`) as a separate process,
 * text on stdin, WAV on stdout, and encodes the PCM to MP3 in process with lamejs (LGPL-3.0, an
 * unmodified npm dependency). The default voice is Mandarin (`cmn`) with the female variant `f3`.
 */
export class EspeakSpeechSynthesizer implements SpeechSynthesizer {
  readonly name = 'espeak-ng';
  readonly maxInputLength: number;
  /** The eSpeak NG voice that speaks (`cmn+f3`). */
  readonly voice: string;
  private readonly program: string;
  private readonly wordsPerMinute: number;
  private readonly bitRateKbps: number;
  private readonly timeoutMs: number;

  constructor(options: EspeakSpeechSynthesizerOptions = {}) {
    this.program = options.program ?? 'espeak-ng';
    this.voice = options.voice ?? 'cmn+f3';
    this.wordsPerMinute = options.wordsPerMinute ?? 160;
    this.bitRateKbps = options.bitRateKbps ?? 48;
    this.maxInputLength = options.maxInputLength ?? 500;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    if (!/^[A-Za-z0-9_+-]{1,64}$/.test(this.voice)) throw new Error('EspeakSpeechSynthesizer: voice must be an eSpeak NG voice name such as cmn+f3');
    this.encoders = new EncoderPool(Math.max(1, Math.floor(options.encoderThreads ?? 1)));
  }

  private readonly encoders: EncoderPool;

  /** Whether the program runs here (`espeak-ng --version`), for the host's `auto` choice and `trellis doctor`. */
  static isAvailable(program = 'espeak-ng'): boolean {
    return EspeakSpeechSynthesizer.version(program) !== null;
  }

  /** The program's version line, or null when it cannot be run. */
  static version(program = 'espeak-ng'): string | null {
    const result = spawnSync(program, ['--version'], { encoding: 'utf8', timeout: 5000 });
    return result.status === 0 ? result.stdout.trim() : null;
  }

  async synthesize(text: string, options: SynthesizeOptions): Promise<SynthesizedAudio> {
    if (text.length > this.maxInputLength) throw new RangeError(`EspeakSpeechSynthesizer: at most ${this.maxInputLength} characters per call`);
    const wav = await this.run(text, options.signal);
    const { sampleRate, samples } = parseWav(wav);
    const durationSeconds = samples.length / sampleRate;
    const mp3 = await this.encoders.encode(samples, sampleRate, this.bitRateKbps, options.signal);
    return { mp3, sampleRate, durationSeconds };
  }

  /** Ends the encoder threads (they are unreferenced, so an idle one never keeps the process alive). */
  async close(): Promise<void> {
    await this.encoders.close();
  }

  private run(text: string, signal?: AbortSignal): Promise<Buffer> {
    return new Promise((resolve, reject) => {
      // -b 1: the input is UTF-8; text comes on stdin, so it is never parsed as options.
      const child = spawn(this.program, ['-v', this.voice, '-s', String(this.wordsPerMinute), '-b', '1', '--stdout'], { stdio: ['pipe', 'pipe', 'pipe'], signal, timeout: this.timeoutMs });
      const out: Buffer[] = [];
      const err: Buffer[] = [];
      child.stdout.on('data', (chunk: Buffer) => out.push(chunk));
      child.stderr.on('data', (chunk: Buffer) => err.push(chunk));
      child.on('error', reject);
      child.on('close', (code) => {
        if (code === 0) resolve(Buffer.concat(out));
        else reject(new Error(`espeak-ng exited with ${code}: ${Buffer.concat(err).toString('utf8').slice(0, 300)}`));
      });
      child.stdin.on('error', () => undefined);
      child.stdin.end(text, 'utf8');
    });
  }
}

/**
 * The encoder thread's program. It is evaluated as a script, so it reaches its modules through
 * `process.getBuiltinModule` and a dynamic `import()` of lamejs by absolute URL: that works from any
 * working directory, bundled or not.
 */
const workerSource = (lamejsUrl: string) => `
const { parentPort } = process.getBuiltinModule('node:worker_threads');
const ready = import(${JSON.stringify(lamejsUrl)});
parentPort.on('message', async ({ id, samples, sampleRate, bitRateKbps }) => {
  try {
    const { Mp3Encoder } = await ready;
    const encoder = new Mp3Encoder(1, sampleRate, bitRateKbps);
    const chunks = [];
    let size = 0;
    const keep = (view) => { if (view.length) { const copy = new Uint8Array(view.buffer, view.byteOffset, view.byteLength).slice(); chunks.push(copy); size += copy.length; } };
    for (let start = 0; start < samples.length; start += 1152 * 16) keep(encoder.encodeBuffer(samples.subarray(start, start + 1152 * 16)));
    keep(encoder.flush());
    const mp3 = new Uint8Array(size);
    let at = 0;
    for (const chunk of chunks) { mp3.set(chunk, at); at += chunk.length; }
    parentPort.postMessage({ id, mp3 }, [mp3.buffer]);
  } catch (error) {
    parentPort.postMessage({ id, error: String(error && error.stack || error) });
  }
});
`;

/** Where lamejs's ES module is: the `import` entry next to the `require` one the resolver finds. */
function lamejsModuleUrl(): string {
  const required = createRequire(import.meta.url).resolve('@breezystack/lamejs');
  return pathToFileURL(required.replace(/lamejs\.iife\.js$/, 'lamejs.js')).href;
}

interface EncodeJob {
  id: number;
  samples: Int16Array;
  sampleRate: number;
  bitRateKbps: number;
  resolve: (mp3: Uint8Array) => void;
  reject: (error: Error) => void;
  signal?: AbortSignal;
}

/**
 * A fixed number of MP3 encoder threads, started on first use and restarted if one dies. Jobs
 * beyond the threads wait in order; an aborted job that has not started is dropped.
 */
class EncoderPool {
  private readonly idle: Worker[] = [];
  private readonly busy = new Map<Worker, EncodeJob>();
  private readonly waiting: EncodeJob[] = [];
  private started = 0;
  private nextId = 1;
  private url?: string;

  constructor(private readonly size: number) {}

  encode(samples: Int16Array, sampleRate: number, bitRateKbps: number, signal?: AbortSignal): Promise<Uint8Array> {
    if (signal?.aborted) return Promise.reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    return new Promise((resolve, reject) => {
      const job: EncodeJob = { id: this.nextId++, samples, sampleRate, bitRateKbps, resolve, reject, signal };
      signal?.addEventListener(
        'abort',
        () => {
          const at = this.waiting.indexOf(job);
          if (at >= 0) {
            this.waiting.splice(at, 1);
            reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
          }
        },
        { once: true },
      );
      this.waiting.push(job);
      this.pump();
    });
  }

  async close(): Promise<void> {
    const workers = [...this.idle, ...this.busy.keys()];
    this.idle.length = 0;
    for (const [, job] of this.busy) job.reject(new Error('The MP3 encoder was closed.'));
    this.busy.clear();
    for (const job of this.waiting.splice(0)) job.reject(new Error('The MP3 encoder was closed.'));
    this.started = 0;
    await Promise.all(workers.map((worker) => worker.terminate()));
  }

  private pump(): void {
    while (this.waiting.length > 0) {
      const worker = this.idle.pop() ?? (this.started < this.size ? this.spawn() : undefined);
      if (!worker) return;
      const job = this.waiting.shift()!;
      this.busy.set(worker, job);
      worker.ref();
      // The samples' buffer is the job's own (parseWav copies), so it moves to the thread.
      worker.postMessage({ id: job.id, samples: job.samples, sampleRate: job.sampleRate, bitRateKbps: job.bitRateKbps }, [job.samples.buffer as ArrayBuffer]);
    }
  }

  private spawn(): Worker {
    this.url ??= lamejsModuleUrl();
    const worker = new Worker(workerSource(this.url), { eval: true });
    this.started++;
    worker.unref();
    worker.on('message', (answer: { id: number; mp3?: Uint8Array; error?: string }) => {
      const job = this.busy.get(worker);
      this.busy.delete(worker);
      worker.unref();
      this.idle.push(worker);
      if (job && job.id === answer.id) {
        if (answer.mp3) job.resolve(answer.mp3);
        else job.reject(new Error(`MP3 encoding failed: ${answer.error ?? 'unknown error'}`));
      }
      this.pump();
    });
    const lost = (error: Error) => {
      if (!this.busy.has(worker) && !this.idle.includes(worker)) return;
      const job = this.busy.get(worker);
      this.busy.delete(worker);
      const at = this.idle.indexOf(worker);
      if (at >= 0) this.idle.splice(at, 1);
      this.started--;
      job?.reject(error);
      this.pump();
    };
    worker.on('error', lost);
    worker.on('exit', (code) => lost(new Error(`The MP3 encoder thread exited with ${code}.`)));
    return worker;
  }
}

/**
 * The PCM of espeak-ng's WAV output (16-bit mono). When writing to a pipe espeak-ng cannot seek
 * back to fill in the sizes, so the data chunk runs to the end of the stream.
 */
export function parseWav(wav: Buffer): { sampleRate: number; samples: Int16Array } {
  if (wav.length < 44 || wav.toString('ascii', 0, 4) !== 'RIFF' || wav.toString('ascii', 8, 12) !== 'WAVE') throw new Error('espeak-ng did not answer a WAV stream');
  let offset = 12;
  let sampleRate = 0;
  while (offset + 8 <= wav.length) {
    const id = wav.toString('ascii', offset, offset + 4);
    const size = wav.readUInt32LE(offset + 4);
    if (id === 'fmt ') {
      const format = wav.readUInt16LE(offset + 8);
      const channels = wav.readUInt16LE(offset + 10);
      sampleRate = wav.readUInt32LE(offset + 12);
      const bits = wav.readUInt16LE(offset + 22);
      if (format !== 1 || channels !== 1 || bits !== 16) throw new Error('espeak-ng answered an unexpected WAV format (want 16-bit mono PCM)');
    } else if (id === 'data') {
      const start = offset + 8;
      const end = size > 0 && size < 0x7fff0000 && start + size <= wav.length ? start + size : wav.length;
      const pcm = wav.subarray(start, end - ((end - start) % 2));
      if (!sampleRate) throw new Error('WAV data before its format');
      // A copy in a buffer of its own (it moves to the encoder thread); WAV is little-endian.
      const samples = new Int16Array(new Uint8Array(pcm).buffer);
      if (endianness() === 'BE') for (let i = 0; i < samples.length; i++) samples[i] = pcm.readInt16LE(i * 2);
      return { sampleRate, samples };
    }
    offset += 8 + size + (size % 2);
  }
  throw new Error('espeak-ng answered a WAV stream without data');
}
