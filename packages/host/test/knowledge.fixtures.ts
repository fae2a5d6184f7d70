import { AlignmentType, Document, HeadingLevel, Packer, Paragraph } from 'docx';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import type { TestHost } from '@trellis/test-support';

/** A two-page PDF, each page one line of text (pdf-lib). */
export async function buildPdf(pages: readonly string[]): Promise<Uint8Array> {
  const pdf = await PDFDocument.create();
  const font = await pdf.embedFont(StandardFonts.Helvetica);
  for (const text of pages) pdf.addPage().drawText(text, { x: 40, y: 700, size: 11, font });
  return pdf.save();
}

/** A DOCX with a heading and paragraphs (docx). */
export async function buildDocx(heading: string, paragraphs: readonly string[]): Promise<Uint8Array> {
  const document = new Document({
    sections: [{ children: [new Paragraph({ text: heading, heading: HeadingLevel.HEADING_1 }), ...paragraphs.map((text) => new Paragraph({ text, alignment: AlignmentType.LEFT }))] }],
  });
  return new Uint8Array(await Packer.toBuffer(document));
}

/** A multipart body as a browser would send it: the platform's FormData, serialised by `Response`. */
export async function multipart(files: ReadonlyArray<{ name: string; type: string; data: Uint8Array | string }>, metadata?: Record<string, unknown>): Promise<{ raw: Uint8Array; contentType: string }> {
  const form = new FormData();
  for (const file of files) form.append('file', new Blob([file.data], { type: file.type }), file.name);
  if (metadata) form.append('metadata', JSON.stringify(metadata));
  const response = new Response(form);
  return { raw: new Uint8Array(await response.arrayBuffer()), contentType: response.headers.get('content-type')! };
}

export async function upload(t: TestHost, token: string, baseId: string, files: Parameters<typeof multipart>[0], metadata?: Record<string, unknown>) {
  const body = await multipart(files, metadata);
  return t.request('POST', `/knowledge/bases/${baseId}/sources`, { token, raw: body.raw, headers: { 'content-type': body.contentType } });
}

/** Polls a source until ingestion is over (ready or failed). */
export async function settled(t: TestHost, token: string, baseId: string, sourceId: string): Promise<any> {
  for (let i = 0; i < 600; i++) {
    const r = await t.request('GET', `/knowledge/bases/${baseId}/sources/${sourceId}`, { token });
    if (r.body.status === 'ready' || r.body.status === 'failed') return r.body;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`source ${sourceId} was not ingested in time`);
}
