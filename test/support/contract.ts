import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';

/**
 * Contract checks for every response an integration suite receives: the response of a documented
 * operation of `/openapi.json` must have a documented status, a documented content type, and (for
 * JSON) a body that validates against the documented schema. Streaming responses
 * (`text/event-stream`, `application/x-ndjson`) are checked for their content type only.
 *
 * One `ContractValidator` per host: `startTestHost` creates it and registers it under the host's
 * origin, so the shared clients (`TestHost.request` and the raw helpers of
 * `packages/host/test/support/http-client.ts`) find it with `contractFor(url)`. A mismatch throws
 * `ContractViolation` from the client call, which fails the test that made the request.
 */
export class ContractViolation extends Error {
  override readonly name = 'ContractViolation';
}

type JsonSchema = Record<string, any>;
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

const streamingTypes = ['text/event-stream', 'application/x-ndjson'];

interface Operation {
  method: string;
  template: string;
  pattern: RegExp;
  /** Number of literal characters, to prefer `/a/b` over `/a/{x}`. */
  specificity: number;
  responses: Record<string, { content?: Record<string, { schema?: JsonSchema }> }>;
}

export class ContractValidator {
  private operations?: Operation[];
  private loading?: Promise<void>;
  private readonly ajv = addFormats(new Ajv2020({ strict: false, allErrors: true, validateFormats: true }));
  private readonly compiled = new Map<string, ValidateFunction>();
  /** Responses checked so far, to show a suite that the check ran. */
  checked = 0;

  /** `baseUrl` is the host's `http://127.0.0.1:<port>` (plus base path). */
  constructor(private readonly baseUrl: string) {}

  /** Loads `/openapi.json` once (on first use). */
  async load(): Promise<void> {
    this.loading ??= (async () => {
      const response = await fetch(`${this.baseUrl}/openapi.json`);
      if (response.status !== 200) throw new Error(`the contract check could not read /openapi.json: ${response.status}`);
      const doc = (await response.json()) as JsonSchema;
      this.ajv.addSchema({ $id: 'https://trellis.test/openapi.json', components: doc.components ?? {} });
      this.operations = [];
      for (const [template, item] of Object.entries<JsonSchema>(doc.paths ?? {})) {
        for (const method of ['get', 'post', 'put', 'patch', 'delete']) {
          const operation = item[method];
          if (!operation) continue;
          const source = template
            .split(/\{[^}]+\}/)
            .map((literal) => literal.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&'))
            .join('[^/]+');
          this.operations.push({
            method: method.toUpperCase(),
            template,
            pattern: new RegExp(`^${source}$`),
            specificity: template.replace(/\{[^}]+\}/g, '').length,
            responses: operation.responses ?? {},
          });
        }
      }
      this.operations.sort((a, b) => b.specificity - a.specificity);
    })();
    await this.loading;
  }

  /**
   * Checks one response. `path` is the request path as sent (query allowed). Requests that match
   * no documented operation (hidden test routes, unknown paths, OPTIONS, HEAD) are not checked.
   * `text` null: the body was not read (a response head only); status and content type are checked.
   */
  async check(method: string, path: string, status: number, contentType: string | null, text: string | null): Promise<void> {
    const upper = method.toUpperCase();
    if (upper === 'HEAD' || upper === 'OPTIONS') return;
    await this.load();
    const pathname = stripBase(path.split('?')[0]!, this.baseUrl);
    let decoded: string;
    try {
      decoded = decodeURI(pathname);
    } catch {
      decoded = pathname;
    }
    const operation = this.operations!.find((op) => op.method === upper && (op.pattern.test(pathname) || op.pattern.test(decoded)));
    if (!operation) return;
    // No route matched at all (a path parameter that does not decode): not this operation's answer.
    if (status === 404 && text !== null && /"error"\s*:\s*"route_not_found"/.test(text)) return;
    const shown = (text ?? '(not read)').slice(0, 300);
    this.checked++;
    const where = `${upper} ${path} (operation ${upper} ${operation.template})`;
    const documented = operation.responses[String(status)] ?? operation.responses[`${String(status)[0]}XX`] ?? operation.responses['default'];
    if (!documented) {
      throw new ContractViolation(`${where} answered ${status}, which the operation does not document (documented: ${Object.keys(operation.responses).join(', ')}). Body: ${shown}`);
    }
    const content = documented.content;
    if (!content || Object.keys(content).length === 0) {
      if (text) throw new ContractViolation(`${where} answered ${status} with a body, but the operation documents none. Body: ${shown}`);
      return;
    }
    const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
    if (!type) {
      if (!text) return;
      throw new ContractViolation(`${where} answered ${status} with a body but no content type (documented: ${Object.keys(content).join(', ')}).`);
    }
    const mediaKey = Object.keys(content).find((key) => matchesType(key, type));
    if (!mediaKey) throw new ContractViolation(`${where} answered ${status} as ${type}, documented as ${Object.keys(content).join(', ')}.`);
    if (streamingTypes.includes(type)) return;
    const schema = content[mediaKey]!.schema;
    if (text === null || !schema || !(type === 'application/json' || type.endsWith('+json'))) return;
    let body: unknown;
    try {
      body = text.length ? JSON.parse(text) : undefined;
    } catch {
      throw new ContractViolation(`${where} answered ${status} as ${type}, but the body is not JSON: ${text.slice(0, 200)}`);
    }
    const validate = this.validator(`${operation.method} ${operation.template} ${status} ${mediaKey}`, schema);
    if (!validate(body)) {
      const problems = (validate.errors ?? []).slice(0, 8).map((e) => `${e.instancePath || '(body)'} ${e.message}${e.params ? ` ${JSON.stringify(e.params)}` : ''}`);
      throw new ContractViolation(`${where} answered ${status} with a body that does not match its documented schema:\n  ${problems.join('\n  ')}\nBody: ${text.slice(0, 500)}`);
    }
  }

  private validator(key: string, schema: JsonSchema): ValidateFunction {
    let validate = this.compiled.get(key);
    if (!validate) {
      validate = this.ajv.compile(rebase(schema));
      this.compiled.set(key, validate);
    }
    return validate;
  }
}

/** Points `#/components/...` references at the registered document. */
function rebase(schema: JsonSchema): JsonSchema {
  return JSON.parse(JSON.stringify(schema), (key, value) => (key === '$ref' && typeof value === 'string' && value.startsWith('#/') ? `https://trellis.test/openapi.json${value}` : value));
}

function matchesType(documented: string, actual: string): boolean {
  // Media type parameters (`; version=0.0.4`, `; charset=utf-8`) do not change the type.
  const key = documented.toLowerCase().split(';')[0]!.trim();
  if (key === actual || key === '*/*') return true;
  if (key.endsWith('/*')) return actual.startsWith(key.slice(0, -1));
  return false;
}

function stripBase(path: string, baseUrl: string): string {
  const base = new URL(baseUrl).pathname.replace(/\/$/, '');
  if (path.startsWith('http://') || path.startsWith('https://')) path = new URL(path).pathname;
  return base && path.startsWith(base) ? path.slice(base.length) || '/' : path;
}

const registry = new Map<string, ContractValidator>();

/** Registers the validator of a host (by origin), for clients that only have a URL. */
export function registerContract(baseUrl: string, validator: ContractValidator): void {
  registry.set(new URL(baseUrl).origin, validator);
}

export function unregisterContract(baseUrl: string): void {
  registry.delete(new URL(baseUrl).origin);
}

/** The validator of the test host serving `url`, if one was started in this process. */
export function contractFor(url: string): ContractValidator | undefined {
  return registry.get(new URL(url).origin);
}
