import { isSealed, SECRET_MASK, type SecretBox } from './secret-box.js';

/** Words that make a conf key a secret wherever it sits (`clientSecret`, `password`, `x-auth-token`, ...). */
const secretWords = new Set(['secret', 'password', 'passwd', 'pwd', 'passphrase', 'token', 'credential', 'credentials', 'authorization', 'auth', 'cookie', 'apikey', 'signature']);
/** Words that, before `key`, make it a secret (`apiKey`, `x-api-key`, `subscription-key`, `private_key`). */
const keyQualifiers = new Set(['api', 'access', 'secret', 'private', 'auth', 'subscription', 'client', 'signing', 'encryption', 'master', 'service']);

/** The words of a key: camelCase, snake_case, kebab-case and dotted names split and lower-cased. */
const wordsOf = (key: string): string[] =>
  key
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((word) => word.toLowerCase());

/**
 * Whether a conf key names a secret: `apiKey`, `api_key`, `x-api-key`, `Authorization`, `token`,
 * `clientSecret`, `password`, ... Counts (`maxTokens`) are not secrets: the word must be `token`.
 */
export function isSecretKey(key: string): boolean {
  const words = wordsOf(key);
  if (words.length === 1 && words[0] === 'key') return true;
  return words.some((word, i) => secretWords.has(word) || (word === 'key' && i > 0 && keyQualifiers.has(words[i - 1]!)));
}

const isPlainObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const hasValue = (value: unknown) => value !== undefined && value !== null && value !== '';

/** Tells `mapSecrets` to drop the key. */
export const DROP: unique symbol = Symbol('drop');

/**
 * A copy of `conf` with `visit` applied to every secret-bearing value, at any depth: a value under a
 * key of `topKeys` (the provider's `secretConfKeys`) or a secret-looking key (`isSecretKey`), every
 * value of a `headers` object (any header may carry a credential), and every value already sealed.
 * `path` names the value (`headers.Authorization`), so a value can be matched with its predecessor.
 */
export function mapSecrets(conf: Record<string, unknown> | null | undefined, visit: (value: unknown, path: readonly string[]) => unknown, topKeys: readonly string[] = []): Record<string, unknown> {
  const walk = (node: unknown, path: string[], secretChildren: boolean): unknown => {
    if (Array.isArray(node)) return node.map((item, i) => (isSealed(item) ? visit(item, [...path, String(i)]) : walk(item, [...path, String(i)], false)));
    if (!isPlainObject(node)) return node;
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(node)) {
      const at = [...path, key];
      const secret = secretChildren || isSealed(value) || isSecretKey(key) || (path.length === 0 && topKeys.includes(key));
      const next = secret ? visit(value, at) : walk(value, at, key.toLowerCase() === 'headers');
      if (next !== DROP) out[key] = next;
    }
    return out;
  };
  return walk(conf ?? {}, [], false) as Record<string, unknown>;
}

const valueAt = (root: unknown, path: readonly string[]): unknown => {
  let node = root;
  for (const part of path) {
    if (node === null || typeof node !== 'object') return undefined;
    node = (node as Record<string, unknown>)[part];
  }
  return node;
};

/** A copy of `conf` where every secret is the mask (sealed ones and plain ones alike); safe to answer or log. */
export const maskConf = (conf: Record<string, unknown> | null | undefined, topKeys: readonly string[] = ['apiKey']): Record<string, unknown> =>
  mapSecrets(conf, (value) => (hasValue(value) ? SECRET_MASK : value), topKeys);

/** The mask in place of a secret takes the value stored at the same place before (or is dropped when there was none). */
export const keepMaskedSecrets = (conf: Record<string, unknown>, previous: Record<string, unknown> | null | undefined, topKeys: readonly string[] = []): Record<string, unknown> =>
  mapSecrets(
    conf,
    (value, path) => {
      if (value !== SECRET_MASK) return value;
      const before = valueAt(previous, path);
      return before === undefined ? DROP : before;
    },
    topKeys,
  );

/** Every secret not sealed yet sealed with the box's current key. */
export const sealSecrets = (box: SecretBox, conf: Record<string, unknown>, topKeys: readonly string[] = []): Record<string, unknown> =>
  mapSecrets(conf, (value) => (hasValue(value) && !isSealed(value) ? box.seal(value) : value), topKeys);

/** Every sealed value opened (plain ones, written before encryption covered them, pass as they are). */
export const openSecrets = (box: SecretBox, conf: Record<string, unknown> | null | undefined): Record<string, unknown> => mapSecrets(conf, (value) => (isSealed(value) ? box.open(value) : value));

/** The plain text of every secret, for removing it from a provider's error text. */
export function secretTexts(conf: Record<string, unknown> | null | undefined, topKeys: readonly string[] = []): string[] {
  const out = new Set<string>();
  const add = (value: unknown) => {
    if (typeof value === 'string') {
      out.add(value);
      // `Bearer sk-...`: the token alone may be echoed too.
      const token = /^\s*(?:bearer|basic|token)\s+(\S+)\s*$/i.exec(value)?.[1];
      if (token) out.add(token);
    } else if (typeof value === 'number') out.add(String(value));
    else if (value && typeof value === 'object') for (const inner of Object.values(value)) add(inner);
  };
  mapSecrets(conf, (value) => (add(value), value), topKeys);
  return [...out].filter((text) => text.length >= 6).sort((a, b) => b.length - a.length);
}
