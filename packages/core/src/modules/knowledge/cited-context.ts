import type { Passage } from './services/retrieval.service.js';

/** Formats passages as numbered excerpts with their sources, for a model to read and cite as [n]. */
export function citedContext(passages: readonly Passage[]): string {
  return passages
    .map((passage, index) => {
      const where = [passage.citation.sourceName, passage.citation.page !== null ? `page ${passage.citation.page}` : null, passage.citation.headingPath.length ? passage.citation.headingPath.join(' > ') : null].filter(Boolean).join(', ');
      return `[${index + 1}] (${where})\n${passage.text}`;
    })
    .join('\n\n');
}
