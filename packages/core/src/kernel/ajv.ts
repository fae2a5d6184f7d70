import type { Ajv, Options } from 'ajv';
import { lazyRequire } from './lazy.js';

const ajvModule = lazyRequire<{ Ajv: typeof Ajv }>('ajv');

/**
 * An ajv instance made on first use (ajv itself required then): importing the package neither
 * loads ajv nor builds the instances of the modules that validate JSON Schemas (block attrs,
 * structured output, evaluators) until something is validated.
 */
export function lazyAjv(options: Options, setup?: (ajv: Ajv) => void): () => Ajv {
  let instance: Ajv | undefined;
  return () => {
    if (!instance) {
      const { Ajv: AjvClass } = ajvModule();
      instance = new AjvClass(options);
      setup?.(instance);
    }
    return instance;
  };
}
