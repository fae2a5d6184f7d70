/**
 * `{{ path }}` placeholders for tool actions. A path is dotted (`args.city`, `data.items.0`); a
 * missing value renders as an empty string. In a JSON body a string that is exactly one
 * placeholder takes the value with its JSON type; anywhere else values are written as text
 * (objects as JSON).
 */
const placeholder = /\{\{\s*([A-Za-z0-9_$.-]+)\s*\}\}/g;
const whole = /^\{\{\s*([A-Za-z0-9_$.-]+)\s*\}\}$/;

export function lookupPath(source: unknown, path: string): unknown {
  let value: unknown = source;
  for (const part of path.split('.')) {
    if (part === '') continue;
    if (value === null || typeof value !== 'object') return undefined;
    if (!Object.prototype.hasOwnProperty.call(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

const asText = (value: unknown): string => (value === undefined || value === null ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value));

export function renderText(template: string, context: Record<string, unknown>, encode: (text: string) => string = (t) => t): string {
  return template.replace(placeholder, (_, path: string) => encode(asText(lookupPath(context, path))));
}

export function renderJson(template: unknown, context: Record<string, unknown>): unknown {
  if (typeof template === 'string') {
    const match = whole.exec(template);
    if (match) return lookupPath(context, match[1]!) ?? null;
    return renderText(template, context);
  }
  if (Array.isArray(template)) return template.map((item) => renderJson(item, context));
  if (template && typeof template === 'object') {
    return Object.fromEntries(Object.entries(template).map(([key, value]) => [key, renderJson(value, context)]));
  }
  return template;
}
