import type { Embedder } from '../../../ports/embedder.js';

export interface HashingEmbedderOptions {
  /** Vector length (default 384). */
  dimension?: number;
  /** Character n-gram lengths (default 2 and 3). */
  ngrams?: readonly number[];
}

/**
 * The embedded default Embedder: lexical feature hashing, no model and no network.
 *
 * The text is NFKC-normalised and lower-cased. Its features are the words (runs of letters and
 * digits; each Han, kana or Hangul character counts as a word, as those scripts do not separate
 * words with spaces) with weight 1, and the character n-grams of each run (padded with a space at
 * both ends, lengths 2 and 3) with weight 0.5. Every feature is hashed (32-bit FNV-1a) to a slot
 * and a sign (the "hashing trick"); slot weights are damped (sign × log(1 + |w|)) and the vector
 * is scaled to unit length.
 *
 * Texts that share words and spellings come out close; synonyms and paraphrases do not. It is
 * deterministic across processes and versions (`name` changes if the method ever does), so stored
 * vectors stay comparable. Bind an AI-backed Embedder for semantic similarity.
 */
export class HashingEmbedder implements Embedder {
  readonly name: string;
  readonly dimension: number;
  private readonly ngrams: readonly number[];

  constructor(options: HashingEmbedderOptions = {}) {
    this.dimension = options.dimension ?? 384;
    if (!Number.isInteger(this.dimension) || this.dimension < 8 || this.dimension > 4096) throw new RangeError('HashingEmbedder: dimension must be an integer from 8 to 4096');
    this.ngrams = options.ngrams ?? [2, 3];
    this.name = `hashing-v1-${this.dimension}-${this.ngrams.join('.')}`;
  }

  async embed(texts: readonly string[]): Promise<Float32Array[]> {
    return texts.map((text) => this.embedOne(text));
  }

  embedOne(text: string): Float32Array {
    const weights = new Float64Array(this.dimension);
    const add = (feature: string, weight: number) => {
      const hash = fnv1a(feature);
      const slot = hash % this.dimension;
      weights[slot]! += (hash & 0x80000000 ? -1 : 1) * weight;
    };
    const normalised = text.normalize('NFKC').toLowerCase();
    for (const run of normalised.match(/[\p{L}\p{N}]+/gu) ?? []) {
      const chars = [...run];
      const ideographic = chars.filter((char) => /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u.test(char));
      if (ideographic.length) for (const char of ideographic) add(`w:${char}`, 1);
      const word = chars.filter((char) => !/[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u.test(char)).join('');
      if (word) add(`w:${word}`, 1);
      const padded = [' ', ...chars, ' '];
      for (const n of this.ngrams) {
        for (let start = 0; start + n <= padded.length; start++) add(`g${n}:${padded.slice(start, start + n).join('')}`, 0.5);
      }
    }
    const vector = new Float32Array(this.dimension);
    let norm = 0;
    for (let i = 0; i < this.dimension; i++) {
      const w = weights[i]!;
      const damped = Math.sign(w) * Math.log1p(Math.abs(w));
      vector[i] = damped;
      norm += damped * damped;
    }
    if (norm > 0) {
      const scale = 1 / Math.sqrt(norm);
      for (let i = 0; i < this.dimension; i++) vector[i]! *= scale;
    }
    return vector;
  }
}

/** 32-bit FNV-1a over the UTF-16 code units of a string. */
function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
