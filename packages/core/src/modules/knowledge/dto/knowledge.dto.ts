import { Type } from 'class-transformer';
import { IsIn, IsInt, IsNumber, IsObject, IsOptional, IsString, IsUrl, IsUUID, Length, Max, MaxLength, Min, ValidateNested } from 'class-validator';
import { Doc, Schema } from '../../../kernel/http/docs-metadata.js';
import { PageQuery } from '../../../kernel/http/dto/paging.js';

export class KnowledgeBaseParams {
  @IsUUID('all')
  @Doc({ description: 'Knowledge base id.' })
  baseId!: string;
}

export class KnowledgeSourceParams extends KnowledgeBaseParams {
  @IsUUID('all')
  @Doc({ description: 'Source id.' })
  sourceId!: string;
}

@Schema({ name: 'KnowledgeChunkingSettings' })
export class ChunkingBody {
  @IsOptional()
  @IsInt()
  @Min(16)
  @Max(8192)
  @Doc({ description: 'Size of a matched (child) chunk, in tokens (GPT o200k tokenizer). Default `knowledge.chunking.chunkTokens`.', example: 200 })
  chunkTokens?: number;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(4096)
  @Doc({ description: 'Tokens neighbouring chunks share (whole sentences), smaller than chunkTokens. Default `knowledge.chunking.overlapTokens`.', example: 30 })
  overlapTokens?: number;

  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(32_768)
  @Doc({ description: 'Size of the parent passage a matched chunk returns, in tokens; 0 returns the chunks themselves. Default `knowledge.chunking.parentTokens`.', example: 800 })
  parentTokens?: number;
}

@Schema({ name: 'KnowledgeBaseCreateRequest' })
export class KnowledgeBaseCreateBody {
  @IsString()
  @Length(1, 200)
  @Doc({ description: 'Name of the knowledge base.', example: 'Support handbook' })
  name!: string;

  @IsOptional()
  @IsString()
  @MaxLength(2000)
  @Doc({ description: 'What it holds.' })
  description?: string;

  @IsOptional()
  @IsUUID('all')
  @Doc({ description: 'An AI model (POST /ai/models) whose provider embeds the chunks and queries; omit for the server embedder (`tools.vdb.embedder`). Fixed for the life of the base.' })
  embeddingModelId?: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(8192)
  @Doc({ description: 'Vector length the embedding model answers; required with embeddingModelId.', example: 1536 })
  embeddingDimension?: number;

  @IsOptional()
  @ValidateNested()
  @Type(() => ChunkingBody)
  @Doc({ nested: () => ChunkingBody })
  chunking?: ChunkingBody;
}

@Schema({ name: 'KnowledgeUrlSourceRequest' })
export class KnowledgeUrlBody {
  @IsUrl({ protocols: ['http', 'https'], require_protocol: true, require_tld: false })
  @MaxLength(4096)
  @Doc({ description: 'An http or https URL, fetched by the server through the network guard (`network.allowPrivateNetworks`).', example: 'https://example.com/handbook.html' })
  url!: string;

  @IsOptional()
  @IsString()
  @Length(1, 500)
  @Doc({ description: 'Name shown in citations (default: the URL).' })
  name?: string;

  @IsOptional()
  @IsObject()
  @Doc({ description: 'Metadata of the source, which retrieval filters can test (`metadata.<key>`).', schema: { type: 'object', additionalProperties: true } })
  metadata?: Record<string, unknown>;
}

export class KnowledgeSourceListQuery extends PageQuery {
  @IsOptional()
  @IsIn(['queued', 'parsing', 'chunking', 'embedding', 'ready', 'failed'])
  @Doc({ description: 'Only sources with this status.' })
  status?: string;
}

@Schema({ name: 'KnowledgeRerankSettings' })
export class RerankBody {
  @IsUUID('all')
  @Doc({ description: 'The AI model that rates each passage for relevance.' })
  modelId!: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100)
  @Doc({ description: 'How many of the best fused passages it rates (default 20).' })
  candidates?: number;
}

@Schema({ name: 'KnowledgeRetrieveRequest' })
export class KnowledgeRetrieveBody {
  @IsString()
  @Length(1, 4000)
  @Doc({ description: 'What to look for.', example: 'How long do refunds take?' })
  query!: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1000)
  @Doc({ description: 'Passages at most (default `knowledge.retrieval.defaultLimit`, at most `knowledge.retrieval.maxLimit`).', example: 5 })
  limit?: number;

  @IsOptional()
  @IsIn(['hybrid', 'keyword', 'vector'])
  @Doc({ description: 'Which rankings to use: both fused (default), or one.' })
  mode?: 'hybrid' | 'keyword' | 'vector';

  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(1)
  @Doc({ description: 'Leave out passages scoring below this (0 to 1).' })
  minScore?: number;

  @IsOptional()
  @IsObject()
  @Doc({ description: 'A filter in the vector database filter language over the source metadata: `metadata.<key>`, `metadata.sourceId`, `metadata.mediaType`.', schema: { type: 'object', additionalProperties: true } })
  filter?: Record<string, unknown>;

  @IsOptional()
  @ValidateNested()
  @Type(() => RerankBody)
  @Doc({ nested: () => RerankBody })
  rerank?: RerankBody;
}
