import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { coreModules, type TrellisModule } from '@trellis/core';
import { CliError } from './config-loader.js';

/** The modules file read from the working directory when neither `--modules` nor TRELLIS_MODULES is given. */
export const defaultModulesFile = 'trellis.modules.mjs';

/**
 * The modules a command loads: the list exported by a modules file (`--modules`, TRELLIS_MODULES,
 * or ./trellis.modules.mjs when it exists), else every built-in module. The file's default export
 * (or its `modules` export) is an array of modules, usually `[...coreModules, myModule]`.
 */
export async function loadModules(flag: string | undefined, env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Promise<{ modules: readonly TrellisModule[]; file?: string }> {
  const explicit = flag ?? env['TRELLIS_MODULES'];
  const discovered = resolve(cwd, defaultModulesFile);
  const file = explicit ? resolve(cwd, explicit) : existsSync(discovered) ? discovered : undefined;
  if (!file) return { modules: coreModules };
  let loaded: { default?: unknown; modules?: unknown };
  try {
    loaded = (await import(pathToFileURL(file).href)) as typeof loaded;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'ERR_MODULE_NOT_FOUND' && !existsSync(file) ? 'the file does not exist' : (error as Error).message;
    throw new CliError(`Cannot load the modules file ${file}: ${reason}`, 2);
  }
  const list = loaded.default ?? loaded.modules;
  if (!Array.isArray(list) || list.some((m) => typeof m !== 'object' || m === null || typeof (m as TrellisModule).name !== 'string')) {
    throw new CliError(`The modules file ${file} must export (as default or as "modules") an array of Trellis modules, such as [...coreModules, myModule].`, 2);
  }
  return { modules: list as TrellisModule[], file };
}
