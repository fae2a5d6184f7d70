import { guardInput } from '../../kernel/http/input-guard.js';
import { formatOf, mediaTypeOf } from './ingest/media-types.js';
import { knowledgeErrors } from './errors.js';

/** One file of a multipart upload, its format known. */
export interface UploadedFile {
  name: string;
  mediaType: string;
  data: Uint8Array;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Reads a `multipart/form-data` upload with the platform's own parser (the Fetch API's
 * `Request.formData`): `file` fields (one or more) and an optional `metadata` field of JSON.
 * Each file is checked for size and format before anything is stored.
 */
export async function readUpload(contentType: string | undefined, body: Uint8Array, maxFileBytes: number): Promise<{ files: UploadedFile[]; metadata: Record<string, unknown> }> {
  if (!contentType || !/^multipart\/form-data\s*;/i.test(contentType)) throw knowledgeErrors.invalidUpload('Send the files as multipart/form-data, in fields named file.');
  let form: FormData;
  try {
    form = await new Request('http://upload.invalid/', { method: 'POST', headers: { 'content-type': contentType }, body }).formData();
  } catch {
    throw knowledgeErrors.invalidUpload('The multipart body could not be read.');
  }
  let metadata: Record<string, unknown> = {};
  const field = form.get('metadata');
  if (field !== null) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(typeof field === 'string' ? field : await field.text());
    } catch {
      throw knowledgeErrors.invalidUpload('The metadata field is not valid JSON.');
    }
    if (!isObject(parsed)) throw knowledgeErrors.invalidUpload('The metadata field is a JSON object.');
    // The edge's checks (depth, NUL, lone surrogates, reserved keys), as for any JSON body.
    guardInput(parsed, 'body');
    if (JSON.stringify(parsed).length > 65_536) throw knowledgeErrors.invalidUpload('The metadata field is at most 64 KiB of JSON.');
    metadata = parsed;
  }
  const files: UploadedFile[] = [];
  for (const entry of form.getAll('file')) {
    if (typeof entry === 'string') throw knowledgeErrors.invalidUpload('The file field carries a file, not text.');
    const name = (entry.name || 'upload').slice(0, 500);
    guardInput({ name }, 'body');
    if (entry.size > maxFileBytes) throw knowledgeErrors.fileTooLarge(name, maxFileBytes);
    const format = formatOf(entry.type, name);
    if (!format) throw knowledgeErrors.unsupportedType(name);
    files.push({ name, mediaType: mediaTypeOf[format], data: new Uint8Array(await entry.arrayBuffer()) });
  }
  if (!files.length) throw knowledgeErrors.invalidUpload('The upload has no file field.');
  return { files, metadata };
}
