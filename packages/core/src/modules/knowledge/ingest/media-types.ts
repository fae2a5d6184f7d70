/** The kinds of document a knowledge base reads, by the parser that reads them. */
export type DocumentFormat = 'pdf' | 'docx' | 'html' | 'markdown' | 'text' | 'csv';

const byMediaType: Record<string, DocumentFormat> = {
  'application/pdf': 'pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document': 'docx',
  'text/html': 'html',
  'application/xhtml+xml': 'html',
  'text/markdown': 'markdown',
  'text/x-markdown': 'markdown',
  'text/plain': 'text',
  'text/csv': 'csv',
  'application/csv': 'csv',
};

const byExtension: Record<string, DocumentFormat> = {
  pdf: 'pdf',
  docx: 'docx',
  html: 'html',
  htm: 'html',
  xhtml: 'html',
  md: 'markdown',
  markdown: 'markdown',
  txt: 'text',
  text: 'text',
  csv: 'csv',
};

/** The media type stored for each format. */
export const mediaTypeOf: Record<DocumentFormat, string> = {
  pdf: 'application/pdf',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  html: 'text/html',
  markdown: 'text/markdown',
  text: 'text/plain',
  csv: 'text/csv',
};

/**
 * The format of a file from its declared media type, else its name's extension (browsers send
 * `application/octet-stream` for types they do not know); `undefined` when neither names one we read.
 */
export function formatOf(mediaType: string | undefined, fileName: string | undefined): DocumentFormat | undefined {
  const type = (mediaType ?? '').split(';')[0]!.trim().toLowerCase();
  const declared = byMediaType[type];
  if (declared) return declared;
  const extension = /\.([A-Za-z0-9]+)$/.exec(fileName ?? '')?.[1]?.toLowerCase();
  return extension ? byExtension[extension] : undefined;
}
