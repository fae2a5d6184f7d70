import type { BlockKindDefinition } from '../kind.js';
import { BlockKinds } from '../registry.js';
import { askKind } from './ask.js';
import { codeKind } from './code.js';
import { httpKind } from './http.js';
import { inputKind } from './input.js';
import { llmKind } from './llm.js';
import { outputKind } from './output.js';
import { subworkflowKind } from './subworkflow.js';
import { toolKind } from './tool.js';

/** The block kinds Trellis ships, which the runs module registers. */
export const builtinBlockKinds: readonly BlockKindDefinition[] = [inputKind, llmKind, codeKind, toolKind, askKind, outputKind, subworkflowKind, httpKind];

/**
 * A registry of the built-in kinds alone (tests, and code that parses without a container), made
 * (its attrs schemas compiled) on first use, not at import.
 */
let builtinRegistry: BlockKinds | undefined;
export const builtinBlockKindRegistry = (): BlockKinds => (builtinRegistry ??= new BlockKinds(builtinBlockKinds));
