import { getMetadataStorage } from 'class-validator';
import { classDoc, propertyDocs } from './docs-metadata.js';
import { credentialRule, type ClassType, type RouteDefinition } from './route.js';

type JsonSchema = Record<string, any>;
type ValidationMetadata = ReturnType<ReturnType<typeof getMetadataStorage>['getTargetValidationMetadatas']>[number];

export interface OpenApiInfo {
  title: string;
  version: string;
  description?: string;
  serverUrl?: string;
}

const errorSchemas: Record<string, JsonSchema> = {
  Error: {
    type: 'object',
    required: ['error', 'message'],
    properties: {
      error: { type: 'string', description: 'Stable snake_case code; see the error catalogue.' },
      message: { type: 'string' },
      details: {
        type: 'array',
        items: {
          type: 'object',
          required: ['field', 'constraint', 'message'],
          properties: { field: { type: 'string' }, constraint: { type: 'string' }, message: { type: 'string' } },
        },
      },
    },
  },
  OAuthError: {
    type: 'object',
    required: ['error'],
    properties: { error: { type: 'string' }, error_description: { type: 'string' } },
  },
  BillingError: {
    type: 'object',
    required: ['success', 'error', 'message'],
    properties: { success: { const: false }, error: { type: 'string' }, message: { type: 'string' } },
  },
  JsonRpcError: {
    type: 'object',
    description: 'A JSON-RPC 2.0 error response; `error.data.error` holds the Trellis code when Trellis wrote it.',
    required: ['jsonrpc', 'error'],
    properties: {
      jsonrpc: { const: '2.0' },
      error: { type: 'object', required: ['code', 'message'], properties: { code: { type: 'integer' }, message: { type: 'string' }, data: {} } },
      id: { type: ['string', 'integer', 'null'] },
    },
  },
  OpenAIError: {
    type: 'object',
    required: ['error'],
    properties: {
      error: {
        type: 'object',
        required: ['message', 'type', 'code'],
        properties: {
          message: { type: 'string' },
          type: { type: 'string', description: 'OpenAI\'s error type (invalid_request_error, authentication_error, permission_error, not_found_error, insufficient_quota, rate_limit_error, server_error).' },
          code: { type: 'string', description: 'The Trellis error code; see the error catalogue.' },
          param: { type: ['string', 'null'] },
        },
      },
    },
  },
};

const errorSchemaNames: Record<string, string> = { oauth: 'OAuthError', billing: 'BillingError', openai: 'OpenAIError', jsonrpc: 'JsonRpcError' };

const statusText: Record<number, string> = {
  400: 'Bad request: malformed body, or input refused at the edge (invalid_characters, input_too_deep, reserved_key)',
  401: 'Missing, invalid or expired credentials',
  402: 'Payment required',
  403: 'Credential kind not accepted or permission missing',
  404: 'Not found',
  409: 'Conflict',
  413: 'Request body too large',
  415: 'Unsupported content type',
  422: 'Validation failed',
  423: 'Locked',
  429: 'Too many requests',
};

/** Builds the OpenAPI 3.1 document from the route table and the DTOs' validation metadata. */
export function buildOpenApi(routes: readonly RouteDefinition[], info: OpenApiInfo): JsonSchema {
  const schemas: Record<string, JsonSchema> = { ...errorSchemas };
  const names = new Map<Function, string>();
  const ref = (dto: ClassType): JsonSchema => ({ $ref: `#/components/schemas/${register(dto)}` });

  function register(dto: ClassType): string {
    const known = names.get(dto);
    if (known) return known;
    const base = classDoc(dto).name ?? dto.name;
    let name = base;
    for (let i = 2; name in schemas; i++) name = `${base}${i}`;
    names.set(dto, name);
    schemas[name] = {}; // placeholder against cycles
    schemas[name] = dtoSchema(dto, ref);
    return name;
  }

  const paths: Record<string, Record<string, JsonSchema>> = {};
  const operationIds = new Set<string>();
  for (const route of routes) {
    if (route.hidden) continue;
    const oasPath = route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
    const method = route.method.toLowerCase();
    const parameters: JsonSchema[] = [];
    const pathNames = [...route.path.matchAll(/:([A-Za-z0-9_]+)/g)].map((m) => m[1]!);
    const paramSchema = route.params ? dtoSchema(route.params, ref) : undefined;
    for (const name of pathNames) {
      parameters.push({ name, in: 'path', required: true, schema: paramSchema?.properties?.[name] ?? { type: 'string' } });
    }
    if (route.query) {
      const q = dtoSchema(route.query, ref);
      for (const [name, schema] of Object.entries<JsonSchema>(q.properties ?? {})) {
        const { description, ...rest } = schema;
        parameters.push({ name, in: 'query', required: (q.required ?? []).includes(name), schema: rest, ...(description ? { description } : {}) });
      }
    }
    const operation: JsonSchema = {
      operationId: uniqueId(route.operationId ?? defaultOperationId(route), operationIds),
      ...(route.summary ? { summary: route.summary } : {}),
      ...(route.description ? { description: route.description } : {}),
      tags: route.tags ?? [],
      ...(parameters.length ? { parameters } : {}),
    };
    if (route.body) {
      const content: JsonSchema = {};
      for (const type of route.bodyTypes ?? ['json']) {
        content[type === 'json' ? 'application/json' : 'application/x-www-form-urlencoded'] = { schema: ref(route.body) };
      }
      // An empty request body is read as `{}`: the body is required only when a field is.
      const bodySchema = schemas[register(route.body)]!;
      operation.requestBody = { required: ((bodySchema.required as string[] | undefined) ?? []).length > 0, content };
    } else if (route.rawBodyDoc) {
      operation.requestBody = { required: route.rawBodyDoc.required ?? true, content: { [route.rawBodyDoc.contentType]: { schema: route.rawBodyDoc.schema } } };
    }
    const rule = credentialRule(route.auth);
    if (rule) {
      operation.security = [{ bearer: [] }, ...(rule.kinds.includes('api_key') ? [{ apiKey: [] }] : [])];
      if (!rule.required) operation.security.push({});
    }
    const success = route.response ?? {};
    const status = String(success.status ?? 200);
    const responses: JsonSchema = {};
    if (status === '204') responses[status] = { description: success.description ?? 'No content' };
    else if (status.startsWith('3')) {
      // A redirect: no body, the target in Location.
      responses[status] = {
        description: success.description ?? 'Redirect',
        headers: { Location: { description: 'Where the client goes next.', required: true, schema: { type: 'string', format: 'uri-reference' } } },
      };
    } else {
      const schema = success.schema ? (typeof success.schema === 'function' ? ref(success.schema as ClassType) : success.schema) : { type: 'object' };
      responses[status] = {
        description: success.description ?? 'Success',
        content: {
          [success.contentType ?? 'application/json']: { schema },
          ...Object.fromEntries((success.mediaTypes ?? []).map((alt) => [alt.contentType, { schema: alt.schema }])),
        },
      };
    }
    for (const alternative of success.alternatives ?? []) {
      const schema = alternative.schema ? (typeof alternative.schema === 'function' ? ref(alternative.schema as ClassType) : alternative.schema) : undefined;
      responses[String(alternative.status)] = {
        description: alternative.description,
        ...(alternative.headers ? { headers: alternative.headers } : {}),
        ...(schema ? { content: { [alternative.contentType ?? 'application/json']: { schema } } } : {}),
      };
    }
    const errorRef = { $ref: `#/components/schemas/${errorSchemaNames[route.errorFormat ?? 'default'] ?? 'Error'}` };
    const errorStatuses = new Map<number, string>(Object.entries(route.errors ?? {}).map(([k, v]) => [Number(k), v]));
    if (rule) {
      // A credential that is sent is checked on optional routes too (a bad one answers 401, a
      // kind the route does not accept 403).
      if (!errorStatuses.has(401)) errorStatuses.set(401, statusText[401]!);
      if (!errorStatuses.has(403)) errorStatuses.set(403, statusText[403]!);
    }
    if (route.refuseImpersonation) {
      const refused = 'refused while an administrator acts as the user (impersonation_forbidden)';
      errorStatuses.set(403, errorStatuses.has(403) ? `${errorStatuses.get(403)}; ${refused}` : refused);
    }
    if (route.body || route.query || route.params) {
      const v = route.validationError?.status ?? 422;
      if (!errorStatuses.has(v)) errorStatuses.set(v, statusText[v] ?? 'Validation failed');
    }
    if (route.body) {
      for (const s of [413, 415]) if (!errorStatuses.has(s)) errorStatuses.set(s, statusText[s]!);
    }
    // The edge refuses hostile input (NUL, lone surrogates, deep nesting, reserved keys) on every
    // route, and a malformed path parameter names no resource.
    if (!errorStatuses.has(400)) errorStatuses.set(400, statusText[400]!);
    if (pathNames.length > 0 && !errorStatuses.has(404)) errorStatuses.set(404, statusText[404]!);
    for (const [code, description] of [...errorStatuses].sort((a, b) => a[0] - b[0])) {
      responses[String(code)] = { description, content: { 'application/json': { schema: errorRef } } };
    }
    // Any operation may fail on the server's side (internal_error, or not_ready while starting or
    // stopping); the body has the route's error shape and never internals.
    responses['5XX'] = { description: 'Server error (internal_error, not_ready, busy, overloaded)', content: { 'application/json': { schema: errorRef } } };
    operation.responses = responses;
    (paths[oasPath] ??= {})[method] = operation;
  }

  return {
    openapi: '3.1.0',
    info: { title: info.title, version: info.version, ...(info.description ? { description: info.description } : {}) },
    servers: [{ url: info.serverUrl ?? '/' }],
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'A user JWT, API key (trk_), agent token (tra_), OAuth access token (toa_) or device token (tdv_).' },
        apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
      },
    },
  };
}

function defaultOperationId(route: RouteDefinition): string {
  const words = route.path
    .split('/')
    .filter(Boolean)
    .map((part) => (part.startsWith(':') ? `by-${part.slice(1)}` : part))
    .join('-');
  return `${route.method.toLowerCase()}-${words || 'root'}`.replace(/[^A-Za-z0-9]+(.)/g, (_, c: string) => c.toUpperCase());
}

function uniqueId(id: string, seen: Set<string>): string {
  let candidate = id;
  for (let i = 2; seen.has(candidate); i++) candidate = `${id}${i}`;
  seen.add(candidate);
  return candidate;
}

/** JSON Schema of a DTO class from its class-validator decorators and `@Doc` hints. */
export function dtoSchema(dto: ClassType, ref: (dto: ClassType) => JsonSchema = (d) => dtoSchema(d, ref)): JsonSchema {
  const storage = getMetadataStorage();
  const metadata = storage.getTargetValidationMetadatas(dto, '', true, false);
  const byProperty = new Map<string, ValidationMetadata[]>();
  for (const m of metadata) {
    const list = byProperty.get(m.propertyName) ?? [];
    list.push(m);
    byProperty.set(m.propertyName, list);
  }
  const docs = propertyDocs(dto);
  for (const name of docs.keys()) if (!byProperty.has(name)) byProperty.set(name, []);
  const properties: Record<string, JsonSchema> = {};
  const required: string[] = [];
  for (const [name, list] of byProperty) {
    let schema: JsonSchema = {};
    let items: JsonSchema | undefined;
    let optional = false;
    for (const m of list) {
      if (m.type === 'conditionalValidation' && m.name === 'isOptional') optional = true;
      if (m.type === 'conditionalValidation' && m.name !== 'isOptional') optional = true;
      const constraint = m.type === 'customValidation' ? storage.getTargetValidatorConstraints(m.constraintCls)[0]?.name : m.type;
      if (!constraint) continue;
      const target = m.each ? (items ??= {}) : schema;
      applyConstraint(target, constraint, m.constraints ?? []);
      if (m.each && !schema.type) schema.type = 'array';
    }
    const doc = docs.get(name);
    if (doc?.nested) {
      const nested = ref(doc.nested());
      if (schema.type === 'array') items = { ...items, ...nested };
      else schema = { ...nested, ...(schema.description ? { description: schema.description } : {}) };
    }
    if (items) schema.items = items;
    if (doc?.schema) Object.assign(schema, doc.schema);
    if (doc?.description) schema.description = doc.description;
    if (doc?.example !== undefined) schema.examples = [doc.example];
    if (doc?.nullable) schema = withNull(schema);
    properties[name] = schema;
    if (!optional) required.push(name);
  }
  const meta = classDoc(dto);
  return {
    type: 'object',
    ...(meta.description ? { description: meta.description } : {}),
    properties,
    ...(required.length ? { required } : {}),
    additionalProperties: false,
  };
}

function applyConstraint(schema: JsonSchema, name: string, c: any[]): void {
  switch (name) {
    case 'isString':
      schema.type = 'string';
      break;
    case 'isInt':
      schema.type = 'integer';
      break;
    case 'isNumber':
    case 'isNumberString':
      schema.type = name === 'isNumber' ? 'number' : 'string';
      break;
    case 'isBoolean':
      schema.type = 'boolean';
      break;
    case 'isEmail':
      schema.type = 'string';
      schema.format = 'email';
      break;
    case 'isUrl':
    case 'isURL':
      schema.type = 'string';
      schema.format = 'uri';
      break;
    case 'isUuid':
    case 'isUUID':
      schema.type = 'string';
      schema.format = 'uuid';
      break;
    case 'isDateString':
    case 'isIso8601':
    case 'isISO8601':
      schema.type = 'string';
      schema.format = 'date-time';
      break;
    case 'isIn':
      schema.enum = c[0];
      break;
    case 'isEnum':
      schema.enum = Object.values(c[0] ?? {});
      break;
    case 'minLength':
      schema.minLength = c[0];
      break;
    case 'maxLength':
      schema.maxLength = c[0];
      break;
    case 'isLength':
      schema.minLength = c[0];
      if (c[1] !== undefined) schema.maxLength = c[1];
      break;
    case 'min':
      schema.minimum = c[0];
      break;
    case 'max':
      schema.maximum = c[0];
      break;
    case 'matches':
      schema.type = 'string';
      schema.pattern = c[0] instanceof RegExp ? c[0].source : String(c[0]);
      break;
    case 'isArray':
      schema.type = 'array';
      break;
    case 'arrayMinSize':
      schema.minItems = c[0];
      break;
    case 'arrayMaxSize':
      schema.maxItems = c[0];
      break;
    case 'isObject':
      schema.type = 'object';
      break;
    case 'isNotEmpty':
      if (schema.type === 'string' || !schema.type) schema.minLength = Math.max(schema.minLength ?? 0, 1);
      break;
    default:
      break;
  }
}

/**
 * A property schema that also admits `null`: `null` joins its `type` where it has one (the plain
 * OpenAPI 3.1 form, which every renderer reads), else the schema (a `$ref`) becomes `anyOf` with `null`.
 */
function withNull(schema: Record<string, unknown>): Record<string, unknown> {
  if (Array.isArray(schema['enum']) && !schema['enum'].includes(null)) schema = { ...schema, enum: [...schema['enum'], null] };
  const type = schema['type'];
  if (typeof type === 'string') return type === 'null' ? schema : { ...schema, type: [type, 'null'] };
  if (Array.isArray(type)) return type.includes('null') ? schema : { ...schema, type: [...type, 'null'] };
  return { anyOf: [schema, { type: 'null' }], ...(schema['description'] ? { description: schema['description'] } : {}) };
}
