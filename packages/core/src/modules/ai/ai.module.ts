import { ContainerModule } from 'inversify';
import { TrellisError } from '../../kernel/errors.js';
import { defineModule } from '../../kernel/module.js';
import { entityManagerServiceIdentifier } from '../../kernel/tokens.js';
import { aiGatewayServiceIdentifier, aiProvidersServiceIdentifier } from '../../ports/ai-provider.js';
import { aiConfigSchema, type AiConfig } from './ai.config.js';
import { AiModelSchema } from './entities/ai-model.entity.js';
import { AiToolSchema } from './entities/ai-tool.entity.js';
import { ModelCallSchema } from './entities/model-call.entity.js';
import { migrations } from './migrations/index.js';
import { aiRoutes } from './routes.js';
import { AiGatewayService } from './services/ai-gateway.service.js';
import { AiModelService } from './services/ai-model.service.js';
import { AiToolService } from './services/ai-tool.service.js';
import { ModelCallRecorder } from './services/model-call-recorder.js';
import { ModelCallReader } from './services/model-call-reader.js';
import { SecretBox, decodeKey, deriveKey } from './services/secret-box.js';
import { aiConfigServiceIdentifier, secretBoxServiceIdentifier } from './tokens.js';

/**
 * AI model configurations and AI tools, and the `AiGateway` that conversations and runs call.
 * Provider adapters are bound by the deployment: `provide(aiProvidersServiceIdentifier, [...])`;
 * without one a model call fails with `ai_provider_not_configured`.
 */
export const aiModule = defineModule({
  name: 'ai',
  dependsOn: ['identity'],
  config: aiConfigSchema,
  entities: [AiModelSchema, AiToolSchema, ModelCallSchema],
  migrations,
  container: ({ config, section, log }) =>
    new ContainerModule(({ bind }) => {
      const ai = section as AiConfig;
      const keys = new Map<string, Buffer>();
      for (const [id, key] of Object.entries(ai.encryption.previousKeys)) keys.set(id, decodeKey(key));
      if (ai.encryption.key) keys.set(ai.encryption.keyId, decodeKey(ai.encryption.key));
      else {
        keys.set(ai.encryption.keyId, deriveKey(config.auth.jwtSecret ?? ''));
        log.warn('⚠ ai.encryption.key is not set: AI model secrets are encrypted with a key derived from auth.jwtSecret. Set ai.encryption.key (32 random bytes, base64) in production.');
      }
      bind(aiConfigServiceIdentifier).toConstantValue(ai);
      bind(secretBoxServiceIdentifier).toConstantValue(new SecretBox(ai.encryption.keyId, keys));
      bind(aiProvidersServiceIdentifier).toConstantValue([]);
      bind(AiModelService).toSelf();
      bind(AiToolService).toSelf();
      bind(ModelCallRecorder).toSelf().inSingletonScope();
      bind(ModelCallReader).toSelf();
      bind(AiGatewayService).toSelf();
      bind(aiGatewayServiceIdentifier).toService(AiGatewayService);
    }),
  routes: aiRoutes,
  jobs: [
    {
      name: 'ai.records.prune',
      intervalMs: (config) => (config['ai'] as AiConfig).records.pruneIntervalMs,
      async run(ctx) {
        const removed = await ctx.get(ModelCallReader).prune(ctx.em);
        if (removed) ctx.log.info({ removed }, 'model call records past their retention deleted');
      },
    },
  ],
  async onStart(ctx) {
    const service = ctx.get(AiModelService);
    const section = ctx.section as AiConfig;
    // Secrets the configured keys cannot open: start refuses, rather than serve models whose keys fail at the first call.
    const check = await service.unreadableSecrets(ctx.get(entityManagerServiceIdentifier).fork(), { clear: section.encryption.onUnreadable === 'clear' });
    if (check.unreadable.length && section.encryption.onUnreadable === 'clear') {
      ctx.log.warn({ models: check.unreadable.map((u) => u.id) }, 'AI model secrets that no configured key decrypts were removed (ai.encryption.onUnreadable=clear): enter those models\' keys again, then remove the setting');
    } else if (check.unreadable.length) {
      const names = check.unreadable.slice(0, 5).map((u) => `${u.name} (${u.id}, ${u.key})`).join(', ');
      throw new TrellisError(
        'internal',
        'ai_secrets_unreadable',
        `${check.unreadable.length} of ${check.checked} stored AI model secrets cannot be decrypted with the configured key (${names}${check.unreadable.length > 5 ? ', ...' : ''}). The database was written with another ai.encryption.key (or another secrets file, or auth.jwtSecret when no key was set). Restore that key: set ai.encryption.key, or keep it in ai.encryption.previousKeys. If it is lost for good, start once with ai.encryption.onUnreadable=clear (TRELLIS__AI__ENCRYPTION__ON_UNREADABLE=clear) to remove those secrets; their models then need their keys entered again.`,
      );
    }
    // Secrets under an old key, or in plain text, are encrypted with the current key.
    const changed = (await service.reseal(ctx.get(entityManagerServiceIdentifier).fork())) + (await ctx.get(AiToolService).reseal(ctx.get(entityManagerServiceIdentifier).fork(), (conf) => service.resealConf(conf)));
    if (changed) ctx.log.info({ records: changed }, 'AI model and tool secrets re-encrypted with the current key');
    else if (Object.keys(section.encryption.previousKeys).length > 0) ctx.log.info('No AI model secret uses an old key: the old keys can be removed');
  },
});
