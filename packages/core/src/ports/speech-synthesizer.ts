import type { ServiceIdentifier } from 'inversify';

export interface SynthesizedAudio {
  /** MPEG-1/2 Layer III bytes. */
  mp3: Uint8Array;
  sampleRate: number;
  durationSeconds: number;
}

export interface SynthesizeOptions {
  /** BCP 47 language of the text (`zh` for Mandarin, the tool service's voice). */
  language: string;
  signal?: AbortSignal;
}

/**
 * Text to speech, answering MP3. Contract: `synthesize` speaks one piece of text of at most
 * `maxInputLength` characters (the tool service splits longer texts at sentence boundaries and
 * joins the pieces' MP3 frames); failures throw.
 *
 * The host binds `@trellis/speech-espeak` (runs the GPL-3.0 `espeak-ng` program as a separate
 * process) when the program is installed; without a synthesizer `/tool/speech` answers 503
 * `speech_not_configured`.
 */
export interface SpeechSynthesizer {
  /** The engine (`espeak-ng`), for logs and `trellis doctor`. */
  readonly name: string;
  /** The voice that speaks (`cmn+f3`), which `/tool/speech` answers as `voice`; the name when unset. */
  readonly voice?: string;
  readonly maxInputLength: number;
  synthesize(text: string, options: SynthesizeOptions): Promise<SynthesizedAudio>;
}

export const speechSynthesizerServiceIdentifier: ServiceIdentifier<SpeechSynthesizer> = Symbol.for('@trellis/core/SpeechSynthesizer');
