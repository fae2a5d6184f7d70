import { ContainerModule } from 'inversify';
import { defineModule, type TrellisModule } from '../../../kernel/module.js';
import { blockKindServiceIdentifier, type BlockKindDefinition } from './kind.js';

/**
 * A module that registers block kinds (loaded after runs): the one line an embedding server adds,
 * `modules: [...coreModules, blockKindModule('uppercase', [uppercaseKind])]`. The same is done by
 * hand with `bind(blockKindServiceIdentifier).toConstantValue(kind)` in any module's container.
 */
export function blockKindModule(name: string, kinds: readonly BlockKindDefinition[]): TrellisModule {
  return defineModule({
    name,
    dependsOn: ['runs'],
    container: () =>
      new ContainerModule(({ bind }) => {
        for (const kind of kinds) bind(blockKindServiceIdentifier).toConstantValue(kind);
      }),
  });
}
