import { TrellisError } from '../../../kernel/errors.js';

const REFERENCE = /\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)((?:\.[A-Za-z0-9_-]+)*)\s*\}\}/g;
const WHOLE = /^\s*\{\{\s*([A-Za-z_][A-Za-z0-9_-]*)((?:\.[A-Za-z0-9_-]+)*)\s*\}\}\s*$/;

/** Reads `{{ name.path }}` from the run context; 'unknown_reference' when the name is not (yet) there. */
function lookup(ctx: ReadonlyMap<string, unknown>, name: string, path: string): unknown {
  if (!ctx.has(name)) {
    throw new TrellisError('bad_request', 'unknown_reference', `{{${name}${path}}} names no input or earlier block.`);
  }
  let value: unknown = ctx.get(name);
  for (const key of path.split('.').slice(1)) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

export const asText = (value: unknown): string => (value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value));

/**
 * Renders a template: every `{{ name }}` or `{{ name.field.0 }}` is replaced by that input's or
 * block's output (strings as they are, other values as JSON, missing fields as nothing), passed
 * through `encode` when given (`encodeURIComponent` in a URL).
 */
export function renderTemplate(template: string, ctx: ReadonlyMap<string, unknown>, encode?: (text: string) => string): string {
  return template.replace(REFERENCE, (_match, name: string, path: string) => (encode ? encode(asText(lookup(ctx, name, path))) : asText(lookup(ctx, name, path))));
}

/** Like `renderTemplate`, but a template that is one reference alone gives the referenced value itself (any JSON). */
export function renderValue(template: string, ctx: ReadonlyMap<string, unknown>): unknown {
  const whole = WHOLE.exec(template);
  if (whole) return lookup(ctx, whole[1]!, whole[2] ?? '') ?? null;
  return renderTemplate(template, ctx);
}

/** Renders every string inside a JSON value (tool block arguments). */
export function renderDeep(value: unknown, ctx: ReadonlyMap<string, unknown>): unknown {
  if (typeof value === 'string') return renderValue(value, ctx);
  if (Array.isArray(value)) return value.map((item) => renderDeep(item, ctx));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderDeep(v, ctx)]));
  return value;
}
