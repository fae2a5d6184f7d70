import { spawn, spawnSync } from 'node:child_process';
import { Mp3Encoder } from '@breezystack/lamejs';
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
  private readonly program: string;
  private readonly voice: string;
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
  }

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
    const encoder = new Mp3Encoder(1, sampleRate, this.bitRateKbps);
    const chunks: Uint8Array[] = [];
    const block = 1152 * 16;
    for (let start = 0; start < samples.length; start += block) {
      const encoded = encoder.encodeBuffer(samples.subarray(start, start + block));
      if (encoded.length) chunks.push(bytes(encoded));
    }
    const tail = encoder.flush();
    if (tail.length) chunks.push(bytes(tail));
    return { mp3: Buffer.concat(chunks), sampleRate, durationSeconds: samples.length / sampleRate };
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

/** lamejs answers Int8Array views; copy them out as bytes. */
const bytes = (view: ArrayBufferView): Uint8Array => new Uint8Array(view.buffer, view.byteOffset, view.byteLength).slice();

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
      const samples = new Int16Array(pcm.length / 2);
      for (let i = 0; i < samples.length; i++) samples[i] = pcm.readInt16LE(i * 2);
      if (!sampleRate) throw new Error('WAV data before its format');
      return { sampleRate, samples };
    }
    offset += 8 + size + (size % 2);
  }
  throw new Error('espeak-ng answered a WAV stream without data');
}
