import type { DocumentContent, RichNode } from '../content/rich-text.js';
import type { KnownSerialization, SerializedContent } from '../content/serialized-content.js';

interface Entry {
  headVersionId: string;
  contentHash: string;
  content: DocumentContent;
  /** Canonical JSON of each top-level block of `content`. */
  blocks: Map<RichNode, string>;
  bytes: number;
}

/**
 * The content this process wrote last, for a few large documents, keyed by the version it is the
 * content of. The next edit of such a document reads only the hash and head version of the row
 * and, when the head is still that version, takes the content from here: no 1 MB read and parse,
 * and only the changed blocks serialized again. A version id names one content for good (every
 * content write sets a new head version), so a hit is exact, whichever process wrote since. The
 * cached content is never modified (edit commands copy what they change).
 */
export class RecentContent {
  private readonly entries = new Map<string, Entry>();
  /** Block serializations by cached content object (for the edit that starts from it). */
  private readonly byContent = new WeakMap<DocumentContent, KnownSerialization>();
  private total = 0;

  constructor(
    /** Smallest content (UTF-8 bytes) worth keeping: small documents are cheap to read. */
    private readonly minBytes = 64 * 1024,
    /** Most bytes of content kept in all. */
    private readonly maxBytes = 32 * 1024 * 1024,
  ) {}

  /** The head version of the cached content of `documentId`, if any. */
  head(documentId: string): string | null {
    return this.entries.get(documentId)?.headVersionId ?? null;
  }

  /** What the serialization of `content` left for the next one, when it is cached content. */
  blocksOf(content: DocumentContent): KnownSerialization | undefined {
    return this.byContent.get(content);
  }

  /** The cached content when it is the content of `headVersionId` with hash `contentHash`. */
  get(documentId: string, headVersionId: string | null, contentHash: string): Entry | undefined {
    const entry = this.entries.get(documentId);
    if (!entry) return undefined;
    if (entry.headVersionId !== headVersionId || entry.contentHash !== contentHash) {
      this.forget(documentId);
      return undefined;
    }
    // Most recently used last.
    this.entries.delete(documentId);
    this.entries.set(documentId, entry);
    return entry;
  }

  set(documentId: string, headVersionId: string, content: DocumentContent, serialized: SerializedContent): void {
    this.forget(documentId);
    if (serialized.bytes < this.minBytes || serialized.bytes > this.maxBytes) return;
    const blocks = new Map<RichNode, string>();
    (content.content ?? []).forEach((block, i) => blocks.set(block, serialized.blocks[i]!));
    this.entries.set(documentId, { headVersionId, contentHash: serialized.hash, content, blocks, bytes: serialized.bytes });
    this.byContent.set(content, { blocks, order: content.content ?? [], states: serialized.states, offsets: serialized.offsets });
    this.total += serialized.bytes;
    for (const [id, entry] of this.entries) {
      if (this.total <= this.maxBytes) break;
      this.entries.delete(id);
      this.total -= entry.bytes;
    }
  }

  forget(documentId: string): void {
    const entry = this.entries.get(documentId);
    if (!entry) return;
    this.entries.delete(documentId);
    this.total -= entry.bytes;
  }
}
