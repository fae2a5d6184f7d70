import { TrellisError } from '../../kernel/errors.js';

/** The errors of knowledge bases (docs/errors.md, "Knowledge bases"). */
export const knowledgeErrors = {
  baseNotFound: () => new TrellisError('not_found', 'knowledge_base_not_found', 'Your team has no knowledge base with that id.'),
  sourceNotFound: () => new TrellisError('not_found', 'knowledge_source_not_found', 'The knowledge base has no source with that id.'),
  noTeam: () => new TrellisError('bad_request', 'no_team', 'You belong to no team; knowledge bases belong to teams.'),
  baseFull: (max: number) => new TrellisError('conflict', 'knowledge_base_full', `A knowledge base holds at most ${max} sources; delete some first.`),
  fileTooLarge: (name: string, max: number) => new TrellisError('payload_too_large', 'knowledge_file_too_large', `${JSON.stringify(name)} is larger than ${max} bytes (knowledge.maxFileBytes).`),
  unsupportedType: (name: string) =>
    new TrellisError('unsupported_media_type', 'knowledge_unsupported_type', `${JSON.stringify(name)} is not a format a knowledge base reads: PDF, DOCX, HTML, Markdown, plain text or CSV.`),
  invalidUpload: (message: string) => new TrellisError('bad_request', 'knowledge_invalid_upload', message),
  chunkingInvalid: (message: string) => new TrellisError('validation', 'knowledge_invalid_chunking', message),
  embeddingFailed: (message: string, cause?: unknown) => new TrellisError('validation', 'knowledge_embedding_failed', message, { cause }),
};
