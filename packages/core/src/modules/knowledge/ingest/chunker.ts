import type { countTokens as CountTokens } from 'gpt-tokenizer';
import type { Nodes, Root } from 'mdast';
import remarkGfm from 'remark-gfm';
import remarkParse from 'remark-parse';
import { unified } from 'unified';
import { lazyRequire } from '../../../kernel/lazy.js';
import type { ChunkingSettings } from '../entities/knowledge-base.entity.js';
import type { ParsedDocument } from './parse-document.js';

/** One chunk cut from a document: `text` is exactly `document.text.slice(start, end)`. */
export interface DraftChunk {
  role: 'parent' | 'child';
  /** Index of the parent among the parents, for a child of a base with parents. */
  parent: number | null;
  text: string;
  start: number;
  end: number;
  headingPath: string[];
  page: number | null;
  tokens: number;
}

/** The smallest piece the chunker moves: a sentence (or a run of words of an overlong one). */
interface Piece {
  start: number;
  end: number;
  tokens: number;
}

/** A block of the document (paragraph, list, table, code) under its headings, cut into pieces. */
interface Block {
  headingPath: string[];
  /** The page the block starts on (null without pages): chunks never cross pages, so a citation names one. */
  page: number | null;
  pieces: Piece[];
  tokens: number;
}

// The tokenizer (its o200k table is the costliest module the package would load) is required when a
// document is first chunked, not at import; `chunkDocument` stays synchronous.
const tokenizer = lazyRequire<{ countTokens: typeof CountTokens }>('gpt-tokenizer');
const countTokens = (text: string): number => tokenizer().countTokens(text);

const parser = unified().use(remarkParse).use(remarkGfm).freeze();
const sentences = new Intl.Segmenter(undefined, { granularity: 'sentence' });
const words = new Intl.Segmenter(undefined, { granularity: 'word' });

const plainText = (node: Nodes): string => ('value' in node && typeof node.value === 'string' ? node.value : 'children' in node ? node.children.map((child) => plainText(child as Nodes)).join('') : '');

/** Pieces of `[start, end)` of `text` of at most `limit` tokens: sentences, an overlong sentence as runs of words. */
function piecesOf(text: string, start: number, end: number, limit: number): Piece[] {
  const out: Piece[] = [];
  for (const sentence of sentences.segment(text.slice(start, end))) {
    const from = start + sentence.index;
    const trimmed = sentence.segment.trimEnd();
    if (!trimmed.trim()) continue;
    const to = from + trimmed.length;
    const tokens = countTokens(trimmed);
    if (tokens <= limit) {
      out.push({ start: from, end: to, tokens });
      continue;
    }
    let run: Piece | null = null;
    for (const word of words.segment(trimmed)) {
      // Whitespace between words is counted but never starts or ends a run.
      const blank = !word.segment.trim();
      if (blank && !run) continue;
      const wordStart = from + word.index;
      const wordTokens = countTokens(word.segment);
      if (run && run.tokens + wordTokens > limit) {
        out.push(run);
        run = null;
        if (blank) continue;
      }
      const end: number = blank ? (run?.end ?? wordStart) : wordStart + word.segment.length;
      run = run ? { start: run.start, end, tokens: run.tokens + wordTokens } : { start: wordStart, end, tokens: wordTokens };
    }
    if (run) out.push(run);
  }
  return out;
}

/** The document's blocks in order, each with the headings above it (remark reads the structure). */
function blocksOf(text: string, limit: number, pageAt: (offset: number) => number | null): Block[] {
  const tree = parser.parse(text) as Root;
  const headings: string[] = [];
  const blocks: Block[] = [];
  for (const node of tree.children) {
    const start = node.position?.start.offset;
    const end = node.position?.end.offset;
    if (start === undefined || end === undefined) continue;
    if (node.type === 'heading') {
      headings.length = Math.min(headings.length, node.depth - 1);
      while (headings.length < node.depth - 1) headings.push('');
      headings.push(plainText(node).trim());
      continue;
    }
    if (node.type === 'thematicBreak' || node.type === 'html' || node.type === 'definition') continue;
    const pieces = piecesOf(text, start, end, limit);
    if (pieces.length) blocks.push({ headingPath: headings.filter(Boolean), page: pageAt(start), pieces, tokens: pieces.reduce((sum, piece) => sum + piece.tokens, 0) });
  }
  return blocks;
}

/**
 * Packs units into groups of at most `limit` tokens, in order; a new group starts with the last
 * units of the previous one that fit in `overlap` tokens (never the whole previous group).
 */
function pack<T extends { tokens: number }>(units: readonly T[], limit: number, overlap: number): T[][] {
  const groups: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const unit of units) {
    if (current.length && size + unit.tokens > limit) {
      groups.push(current);
      const carried: T[] = [];
      let carriedSize = 0;
      for (let i = current.length - 1; i > 0; i--) {
        const candidate = current[i]!;
        if (carriedSize + candidate.tokens > overlap || carriedSize + candidate.tokens + unit.tokens > limit) break;
        carried.unshift(candidate);
        carriedSize += candidate.tokens;
      }
      current = carried;
      size = carriedSize;
    }
    current.push(unit);
    size += unit.tokens;
  }
  if (current.length) groups.push(current);
  return groups;
}

/** Units of a section at the coarsest level that fits: whole blocks, or the pieces of a block too large. */
function unitsOf(blocks: readonly Block[], limit: number): Piece[] {
  return blocks.flatMap((block) => {
    if (block.tokens > limit) return block.pieces;
    return [{ start: block.pieces[0]!.start, end: block.pieces[block.pieces.length - 1]!.end, tokens: block.tokens }];
  });
}

/** Consecutive blocks under the same headings, on the same page. */
function sections(blocks: readonly Block[]): Block[][] {
  const out: Block[][] = [];
  for (const block of blocks) {
    const last = out[out.length - 1];
    if (last && last[0]!.page === block.page && last[0]!.headingPath.join('\u0000') === block.headingPath.join('\u0000')) last.push(block);
    else out.push([block]);
  }
  return out;
}

/**
 * Cuts a document recursively by its structure: sections under the same headings first, then
 * paragraphs (and other blocks), then sentences, then words, so a chunk breaks at the largest
 * boundary that keeps it within `chunkTokens` (GPT o200k tokens), neighbouring chunks sharing up
 * to `overlapTokens`. With `parentTokens`, sections are first cut into parent passages the same
 * way and each parent into child chunks: children are matched, their parent is returned.
 */
export function chunkDocument(document: ParsedDocument, settings: ChunkingSettings): DraftChunk[] {
  const { text, pages } = document;
  const childLimit = settings.chunkTokens;
  const parentLimit = Math.max(settings.parentTokens, childLimit);
  const pageAt = (offset: number): number | null => {
    if (!pages.length) return null;
    for (const span of pages) if (offset < span.end || span === pages[pages.length - 1]) return span.page;
    return null;
  };
  const blocks = blocksOf(text, childLimit, pageAt);
  const draft = (role: DraftChunk['role'], parent: number | null, group: readonly Piece[], headingPath: string[]): DraftChunk => {
    const start = group[0]!.start;
    const end = group[group.length - 1]!.end;
    return { role, parent, text: text.slice(start, end), start, end, headingPath, page: pageAt(start), tokens: group.reduce((sum, piece) => sum + piece.tokens, 0) };
  };
  const out: DraftChunk[] = [];
  let parents = 0;
  for (const section of sections(blocks)) {
    const headingPath = section[0]!.headingPath;
    if (settings.parentTokens <= 0) {
      for (const group of pack(unitsOf(section, childLimit), childLimit, settings.overlapTokens)) out.push(draft('child', null, group, headingPath));
      continue;
    }
    for (const parentGroup of pack(unitsOf(section, parentLimit), parentLimit, 0)) {
      const parentIndex = parents++;
      out.push(draft('parent', null, parentGroup, headingPath));
      // A unit of the parent too large for a child is cut again, into its sentences (or words).
      const pieces = parentGroup.flatMap((unit) => (unit.tokens > childLimit ? piecesOf(text, unit.start, unit.end, childLimit) : [unit]));
      for (const group of pack(pieces, childLimit, settings.overlapTokens)) out.push(draft('child', parentIndex, group, headingPath));
    }
  }
  return out;
}
