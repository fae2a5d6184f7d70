/**
 * Splits text into pieces of at most `maxLength` characters for synthesis: at sentence ends
 * (。！？!?；; and a full stop followed by a space, and line breaks) first, then at clause marks
 * (，,、：:) inside a sentence that is still too long, and only then hard, so no piece exceeds the
 * limit. Whitespace-only pieces are dropped.
 */
export function splitSentences(text: string, maxLength: number): string[] {
  const sentences = text.match(/[^。！？!?；;\n]+(?:[。！？!?；;]+|\n+|$)|[。！？!?；;\n]+/g) ?? [];
  const pieces: string[] = [];
  for (const raw of sentences.flatMap((s) => s.split(/(?<=\.)\s+/))) {
    const sentence = raw.trim();
    if (!sentence || !/[\p{L}\p{N}]/u.test(sentence)) continue;
    if (sentence.length <= maxLength) {
      pieces.push(sentence);
      continue;
    }
    let current = '';
    for (const clause of sentence.match(/[^，,、：:]+[，,、：:]*|[，,、：:]+/g) ?? [sentence]) {
      if (current.length + clause.length <= maxLength) {
        current += clause;
        continue;
      }
      if (current) pieces.push(current);
      current = '';
      let rest = clause;
      while (rest.length > maxLength) {
        pieces.push(rest.slice(0, maxLength));
        rest = rest.slice(maxLength);
      }
      current = rest;
    }
    if (current.trim()) pieces.push(current);
  }
  return pieces;
}
