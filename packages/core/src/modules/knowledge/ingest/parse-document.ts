import type { NodeHtmlMarkdown } from 'node-html-markdown';
import { lazyModule } from '../../../kernel/lazy.js';
import type { DocumentFormat } from './media-types.js';

/** A page of the extracted text: characters `[start, end)` came from PDF page `page`. */
export interface PageSpan {
  page: number;
  start: number;
  end: number;
}

/** A document as text (Markdown where the format has structure), with its pages when it has some. */
export interface ParsedDocument {
  text: string;
  pages: PageSpan[];
}

// The parsers are loaded when a document of their format is first read, not at import: together
// (mammoth with JSZip and xmldom, node-html-markdown with its HTML parser, PDF.js) they are a
// good part of what importing the package would otherwise cost every process.
const loadCsv = lazyModule(() => import('csv-parse/sync'));
const loadMammoth = lazyModule(async () => (await import('mammoth')).default);
const loadPdf = lazyModule(() => import('unpdf'));
const loadHtml = lazyModule(async (): Promise<NodeHtmlMarkdown> => {
  const { NodeHtmlMarkdown } = await import('node-html-markdown');
  return new NodeHtmlMarkdown({ ignore: ['script', 'style', 'noscript', 'template', 'nav', 'footer'] });
});
const utf8 = new TextDecoder('utf-8', { fatal: false });

/** Each row a paragraph of `column: value` lines, so a row stays in one chunk and its values keep their names. */
async function csvToText(bytes: Uint8Array): Promise<string> {
  const { parse: parseCsv } = await loadCsv();
  const rows = parseCsv(Buffer.from(bytes), { columns: true, skip_empty_lines: true, relax_column_count: true, bom: true, trim: true }) as Array<Record<string, string>>;
  return rows.map((row) => Object.entries(row).filter(([, value]) => value !== '' && value !== undefined).map(([key, value]) => `${key}: ${value}`).join('\n')).join('\n\n');
}

async function pdfToText(bytes: Uint8Array): Promise<ParsedDocument> {
  const { extractText, getDocumentProxy } = await loadPdf();
  const document = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
  try {
    const { text } = await extractText(document, { mergePages: false });
    const pages: PageSpan[] = [];
    let out = '';
    text.forEach((pageText, index) => {
      if (out) out += '\n\n';
      const start = out.length;
      out += pageText.trim();
      pages.push({ page: index + 1, start, end: out.length });
    });
    return { text: out, pages };
  } finally {
    await document.destroy();
  }
}

/**
 * Extracts the text of a file with the library for its format: unpdf (PDF.js) for PDF, mammoth then
 * node-html-markdown for DOCX (headings survive as Markdown headings), node-html-markdown for HTML,
 * csv-parse for CSV; Markdown and plain text are read as UTF-8. Throws on a file the library
 * cannot read; the caller records why.
 */
export async function parseDocument(format: DocumentFormat, bytes: Uint8Array): Promise<ParsedDocument> {
  switch (format) {
    case 'pdf':
      return pdfToText(bytes);
    case 'docx': {
      const [mammoth, html] = await Promise.all([loadMammoth(), loadHtml()]);
      const converted = await mammoth.convertToHtml({ buffer: Buffer.from(bytes) });
      return { text: html.translate(converted.value).trim(), pages: [] };
    }
    case 'html':
      return { text: (await loadHtml()).translate(utf8.decode(bytes)).trim(), pages: [] };
    case 'csv':
      return { text: await csvToText(bytes), pages: [] };
    case 'markdown':
    case 'text':
      return { text: utf8.decode(bytes).replace(/^\uFEFF/, ''), pages: [] };
  }
}
