import { createRequire } from 'node:module';
import type { Ajv, Options } from 'ajv';

const require = createRequire(import.meta.url);

/**
 * An ajv instance made on first use (ajv itself required then): importing the package neither
 * loads ajv nor builds the instances of the modules that validate JSON Schemas (block attrs,
 * structured output, evaluators) until something is validated.
 */
export function lazyAjv(options: Options, setup?: (ajv: Ajv) => void): () => Ajv {
  let instance: Ajv | undefined;
  return () => {
    if (!instance) {
      const { Ajv: AjvClass } = require('ajv') as { Ajv: typeof Ajv };
      instance = new AjvClass(options);
      setup?.(instance);
    }
    return instance;
  };
}
