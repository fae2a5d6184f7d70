import { ContainerModule } from 'inversify';
import { credentialVerifierServiceIdentifier } from '../../kernel/auth/authenticator.js';
import { InMemoryRateLimiter, rateLimiterServiceIdentifier } from '../../ports/rate-limiter.js';
import { defineModule } from '../../kernel/module.js';
import { ormServiceIdentifier } from '../../kernel/tokens.js';
import { embedderServiceIdentifier } from '../../ports/embedder.js';
import { vectorStoreServiceIdentifier } from '../../ports/vector-store.js';
import { toolsConfigSchema, toolsConfigServiceIdentifier, type ToolsConfig } from './config.js';
import { AnonymousAccountSchema } from './entities/anonymous-account.entity.js';
import { AnonymousTokenSchema } from './entities/anonymous-token.entity.js';
import { VdbCollectionSchema } from './entities/vdb-collection.entity.js';
import { VdbRecordSchema } from './entities/vdb-record.entity.js';
import { migrations } from './migrations/index.js';
import { addressRoutes } from './routes/address.routes.js';
import { toolOAuthRoutes } from './routes/oauth.routes.js';
import { speechRoutes } from './routes/speech.routes.js';
import { SpeechService } from './services/speech.service.js';
import { conversationMessageLookupServiceIdentifier, MetadataMessageLookup } from './speech/message-lookup.js';
import { vdbRoutes } from './routes/vdb.routes.js';
import { AnonymousAuthService } from './services/anonymous-auth.service.js';
import { ToolRateLimiter } from './services/tool-rate-limiter.js';
import { VdbService } from './services/vdb.service.js';
import { ExactScanVectorStore } from './vdb/exact-scan-vector-store.js';
import { HashingEmbedder } from './vdb/hashing-embedder.js';
import { AiModelEmbedder } from './vdb/ai-model-embedder.js';
import { AiGatewayService } from '../ai/index.js';
import { AnonymousTokenVerifier } from './verifiers/anonymous-token.verifier.js';

/**
 * The tool service (spec "Tool service"): a vector database, text-to-speech, address parsing and
 * anonymous login with token exchange, each behind a port with an embedded default.
 */
export const toolsModule = defineModule({
  name: 'tools',
  dependsOn: ['identity', 'oauth', 'conversations'],
  config: toolsConfigSchema,
  entities: [VdbCollectionSchema, VdbRecordSchema, AnonymousAccountSchema, AnonymousTokenSchema],
  migrations,
  container: ({ section }) =>
    new ContainerModule(({ bind, isBound }) => {
      const config = section as ToolsConfig;
      bind(toolsConfigServiceIdentifier).toConstantValue(config);
      // Embedded defaults; adapters passed to the kernel replace them.
      const ai = config.vdb.embedder;
      if (ai.modelId !== undefined) {
        // The AI-backed embedder: the configured AI model's provider embeds (resolved per call).
        if (ai.dimension === undefined) throw new Error('tools.vdb.embedder.dimension is required with tools.vdb.embedder.modelId');
        const { modelId, dimension } = ai;
        bind(embedderServiceIdentifier)
          .toDynamicValue((context) => {
            const gateway = context.get(AiGatewayService);
            return new AiModelEmbedder({ modelId, dimension, embed: (input) => gateway.embed(input) });
          })
          .inSingletonScope();
      } else {
        bind(embedderServiceIdentifier).toConstantValue(new HashingEmbedder({ dimension: config.vdb.embeddingDimension }));
      }
      bind(vectorStoreServiceIdentifier).toConstantValue(new ExactScanVectorStore());
      bind(VdbService).toSelf();
      if (!isBound(rateLimiterServiceIdentifier)) bind(rateLimiterServiceIdentifier).toConstantValue(new InMemoryRateLimiter());
      bind(ToolRateLimiter).toSelf();
      bind(AnonymousAuthService).toSelf();
      bind(conversationMessageLookupServiceIdentifier).toConstantValue(new MetadataMessageLookup());
      bind(SpeechService).toSelf();
      bind(credentialVerifierServiceIdentifier).to(AnonymousTokenVerifier);
    }),
  routes: [...speechRoutes, ...vdbRoutes, ...toolOAuthRoutes, ...addressRoutes],
  async onStart({ get }) {
    await get(vectorStoreServiceIdentifier).start?.(get(ormServiceIdentifier));
  },
  async onStop({ get }) {
    await get(vectorStoreServiceIdentifier).close?.();
  },
});
