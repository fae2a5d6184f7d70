import { s } from '../../kernel/config/schema.js';

export const documentsConfigSchema = s.object({
  maxContentBytes: s
    .int()
    .range(1024, 256 * 1024 * 1024)
    .default(2 * 1024 * 1024)
    .describe('Largest document content, in UTF-8 bytes of its canonical JSON; larger content is refused with 413 `content_too_large`. Document routes accept bodies up to twice this plus 64 KiB.'),
  maxCommands: s.int().range(1, 100_000).default(500).describe('Most commands one edit may carry.'),
});

export interface DocumentsConfig {
  maxContentBytes: number;
  maxCommands: number;
}
