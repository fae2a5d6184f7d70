import type { EntityManager } from '@mikro-orm/core';
import { inject, injectable, optional } from 'inversify';
import { TrellisError, type ValidationIssue } from '../../../kernel/errors.js';
import type { Paging } from '../../../kernel/http/dto/paging.js';
import type { AiToolDefinition, JsonSchemaObject } from '../../../ports/ai-provider.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { networkGuardServiceIdentifier, type NetworkGuard } from '../../../kernel/net/network-guard.js';
import { User } from '../../identity/index.js';
import type { AiConfig } from '../ai.config.js';
import { AiTool, type AiToolAction } from '../entities/ai-tool.entity.js';
import { aiConfigServiceIdentifier, secretBoxServiceIdentifier } from '../tokens.js';
import type { SecretBox } from './secret-box.js';
import { keepMaskedSecrets, openSecrets, sealSecrets } from './secret-fields.js';
import { httpMethods, runHttpAction, type HttpActionConf } from './http-action.js';
import { describeMcpTool, runMcpAction, type McpActionConf } from './mcp-action.js';
import { knowledgeRetrieverServiceIdentifier } from '../../../ports/knowledge-retriever.js';
import { kernelServiceIdentifier } from '../../../kernel/tokens.js';
import type { Kernel } from '../../../kernel/kernel.js';
import { isUuid } from '../../../kernel/crypto.js';

export interface AiToolInput {
  name: string;
  desc?: string | null;
  service?: string | null;
  conf?: Record<string, unknown>;
  actions: AiToolAction[];
}

export const toolNotFound = (id: string) => new TrellisError('not_found', 'tool_not_found', `No AI tool of yours has the id ${id}.`);

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const actionTypes = ['http', 'mcp', 'knowledge'] as const;
/** What a model passes to a `knowledge` action. */
const knowledgeParameters: JsonSchemaObject = {
  type: 'object',
  properties: { query: { type: 'string', description: 'What to look for in the knowledge base.' }, limit: { type: 'integer', minimum: 1, maximum: 20, description: 'Passages at most.' } },
  required: ['query'],
};
const emptyParameters: JsonSchemaObject = { type: 'object', properties: {}, additionalProperties: true };

/** What the caller of an action knows besides the model's arguments (the execute endpoint's body). */
export interface ActionContext {
  content?: string;
  convId?: string;
  msgId?: string;
  data?: Record<string, unknown>;
  /** The tool's owner: a `knowledge` action searches the knowledge bases of the owner's team. */
  ownerId?: string;
  /** The call's idempotency key (a run's tool call): `Idempotency-Key` of an http action, `_meta.idempotencyKey` of an MCP call. */
  idempotencyKey?: string;
}

/** One action resolved for calling: the function name offered to a model and what runs it. */
interface ResolvedAction {
  functionName: string;
  tool: AiTool;
  action: AiToolAction;
}

/**
 * AI tools: CRUD within one owner, action validation, the function definitions offered to models,
 * and running an action (`http`: a templated request; `mcp`: a tool on an MCP server). Secrets in the
 * tool's conf and its actions' conf (every `headers` value, secret-looking keys) are sealed at rest
 * like AI model secrets, masked in views, and opened only to run an action.
 */
@injectable()
export class AiToolService {
  constructor(
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(aiConfigServiceIdentifier) private readonly config: AiConfig,
    @inject(networkGuardServiceIdentifier) private readonly guard: NetworkGuard,
    @inject(secretBoxServiceIdentifier) private readonly box: SecretBox,
    // Resolved when a knowledge action runs (the retriever depends on the AI gateway, which depends on this service).
    @inject(kernelServiceIdentifier) @optional() private readonly kernel?: Kernel,
  ) {}

  /** Conf and actions to store: a mask keeps the secret stored at the same place (actions matched by name), then every secret is sealed. */
  seal(conf: Record<string, unknown>, actions: AiToolAction[], previous: Pick<AiTool, 'conf' | 'actions'> | null): { conf: Record<string, unknown>; actions: AiToolAction[] } {
    return {
      conf: sealSecrets(this.box, keepMaskedSecrets(conf, previous?.conf)),
      actions: actions.map((action) => {
        if (action.conf === undefined) return action;
        const before = previous?.actions.find((a) => a.name === action.name)?.conf;
        return { ...action, conf: sealSecrets(this.box, keepMaskedSecrets(action.conf, before)) };
      }),
    };
  }

  /** An action with its secrets opened, to run it. */
  private open(action: AiToolAction): AiToolAction {
    return action.conf === undefined ? action : { ...action, conf: openSecrets(this.box, action.conf) };
  }

  /** Seals the plain secrets of tools written before tool secrets were encrypted, and re-seals old keys; returns how many tools changed. */
  async reseal(em: EntityManager, resealConf: (conf: Record<string, unknown>) => Record<string, unknown> | null): Promise<number> {
    let changed = 0;
    const batch = 200;
    for (let offset = 0; ; offset += batch) {
      const tools = await em.find(AiTool, {}, { orderBy: { id: 'asc' }, limit: batch, offset });
      for (const tool of tools) {
        const conf = resealConf(tool.conf ?? {});
        let dirty = conf !== null;
        const actions = tool.actions.map((action) => {
          const sealed = action.conf ? resealConf(action.conf) : null;
          if (!sealed) return action;
          dirty = true;
          return { ...action, conf: sealed };
        });
        if (dirty) {
          if (conf) tool.conf = conf;
          tool.actions = actions;
          changed++;
        }
      }
      await em.flush();
      if (tools.length < batch) return changed;
    }
  }

  /** Checks every action's type and conf; 422 `invalid_tool_action` with details. */
  validateActions(actions: readonly AiToolAction[]): AiToolAction[] {
    const issues: ValidationIssue[] = [];
    const names = new Set<string>();
    const out: AiToolAction[] = [];
    actions.forEach((action, i) => {
      const at = `actions.${i}`;
      if (names.has(action.name)) issues.push({ field: `${at}.name`, constraint: 'unique', message: `Two actions are named ${action.name}.` });
      names.add(action.name);
      const conf = action.conf ?? {};
      if (!(actionTypes as readonly string[]).includes(action.type)) {
        issues.push({ field: `${at}.type`, constraint: 'isIn', message: 'An action type is http, mcp or knowledge.' });
        return;
      }
      if (action.type === 'knowledge') {
        // Retrieval from a knowledge base of the owner's team (docs/knowledge.md): no URL, no secrets.
        if (typeof conf.knowledgeBase !== 'string' || !isUuid(conf.knowledgeBase)) issues.push({ field: `${at}.conf.knowledgeBase`, constraint: 'isUuid', message: 'conf.knowledgeBase is the id of a knowledge base.' });
        if (conf.description !== undefined && typeof conf.description !== 'string') issues.push({ field: `${at}.conf.description`, constraint: 'isString', message: 'conf.description is text.' });
        out.push({ name: action.name, type: 'knowledge', conf: { ...conf } });
        return;
      }
      const url = conf.url;
      // An http action's URL may start with a placeholder: a base URL given as an argument (checked when called).
      const baseFromArgs = action.type === 'http' && typeof url === 'string' && /^\{\{\s*[A-Za-z0-9_$.-]+\s*\}\}/.test(url);
      if (typeof url !== 'string' || (!baseFromArgs && !/^https?:\/\//i.test(url)) || url.length > 4096) {
        issues.push({ field: `${at}.conf.url`, constraint: 'isUrl', message: 'conf.url is an http or https URL, or for http actions starts with a {{placeholder}} of the base URL (it may hold {{placeholders}} for http actions).' });
      }
      if (conf.headers !== undefined && (!isObject(conf.headers) || Object.values(conf.headers).some((v) => typeof v !== 'string'))) {
        issues.push({ field: `${at}.conf.headers`, constraint: 'isObject', message: 'conf.headers maps header names to strings.' });
      }
      if (conf.timeoutMs !== undefined && (!Number.isInteger(conf.timeoutMs) || (conf.timeoutMs as number) < 1 || (conf.timeoutMs as number) > this.config.tools.timeoutMs)) {
        issues.push({ field: `${at}.conf.timeoutMs`, constraint: 'range', message: `conf.timeoutMs is 1 to ${this.config.tools.timeoutMs} milliseconds.` });
      }
      if (conf.parameters !== undefined && (!isObject(conf.parameters) || conf.parameters.type !== 'object')) {
        issues.push({ field: `${at}.conf.parameters`, constraint: 'jsonSchema', message: 'conf.parameters is a JSON Schema of type object.' });
      }
      if (conf.description !== undefined && typeof conf.description !== 'string') {
        issues.push({ field: `${at}.conf.description`, constraint: 'isString', message: 'conf.description is text.' });
      }
      if (action.type === 'http') {
        const method = conf.method === undefined ? 'GET' : typeof conf.method === 'string' ? conf.method.toUpperCase() : '';
        if (!(httpMethods as readonly string[]).includes(method)) issues.push({ field: `${at}.conf.method`, constraint: 'isIn', message: `conf.method is one of ${httpMethods.join(', ')}.` });
        if (conf.response !== undefined && (!isObject(conf.response) || (conf.response.path !== undefined && typeof conf.response.path !== 'string'))) {
          issues.push({ field: `${at}.conf.response`, constraint: 'isObject', message: 'conf.response is { path?: "dotted.path" }.' });
        }
        out.push({ name: action.name, type: 'http', conf: { ...conf, method } });
      } else {
        if (typeof conf.tool !== 'string' || conf.tool.length === 0) issues.push({ field: `${at}.conf.tool`, constraint: 'isString', message: 'conf.tool names the tool on the MCP server.' });
        out.push({ name: action.name, type: 'mcp', conf: { ...conf } });
      }
    });
    if (issues.length) throw new TrellisError('bad_request', 'invalid_tool_action', 'An action of the tool is not valid.', { details: issues });
    return out;
  }

  async list(em: EntityManager, ownerId: string, page: Paging): Promise<{ items: AiTool[]; total: number }> {
    const [items, total] = await em.findAndCount(AiTool, { owner: ownerId }, { orderBy: { createdAt: 'desc', id: 'desc' }, limit: page.size, offset: page.offset });
    return { items, total };
  }

  async get(em: EntityManager, ownerId: string, id: string): Promise<AiTool> {
    const tool = isUuid(id) ? await em.findOne(AiTool, { id, owner: ownerId }) : null;
    if (!tool) throw toolNotFound(id);
    return tool;
  }

  async create(em: EntityManager, ownerId: string, input: AiToolInput): Promise<AiTool> {
    const { conf, actions } = this.seal(input.conf ?? {}, this.validateActions(input.actions), null);
    const tool = em.create(AiTool, {
      id: this.ids.next(),
      owner: em.getReference(User, ownerId),
      name: input.name,
      desc: input.desc ?? null,
      service: input.service ?? null,
      conf,
      actions,
    } as AiTool);
    await em.flush();
    return tool;
  }

  async update(em: EntityManager, ownerId: string, id: string, input: AiToolInput): Promise<AiTool> {
    const tool = await this.get(em, ownerId, id);
    const { conf, actions } = this.seal(input.conf ?? {}, this.validateActions(input.actions), tool);
    tool.name = input.name;
    tool.desc = input.desc ?? null;
    tool.service = input.service ?? null;
    tool.conf = conf;
    tool.actions = actions;
    await em.flush();
    return tool;
  }

  async remove(em: EntityManager, ownerId: string, id: string): Promise<void> {
    const deleted = isUuid(id) ? await em.nativeDelete(AiTool, { id, owner: ownerId }) : 0;
    if (deleted === 0) throw toolNotFound(id);
  }

  /** Tools of `userId` among `toolIds`, in the order given; unknown ids are skipped. */
  async usable(em: EntityManager, userId: string, toolIds: readonly string[]): Promise<AiTool[]> {
    const ids = toolIds.filter(isUuid);
    if (ids.length === 0) return [];
    const tools = await em.find(AiTool, { id: { $in: ids }, owner: userId });
    const byId = new Map(tools.map((t) => [t.id, t]));
    return ids.map((id) => byId.get(id)).filter((t): t is AiTool => t !== undefined);
  }

  /** The function name of every action: `<tool>__<action>`, sanitised, unique, at most 64 characters. */
  resolve(tools: readonly AiTool[]): ResolvedAction[] {
    const used = new Set<string>();
    const out: ResolvedAction[] = [];
    for (const tool of tools) {
      const prefix = tool.name.replace(/[^a-zA-Z0-9_-]+/g, '_').replace(/^_+|_+$/g, '').slice(0, 28) || 'tool';
      for (const action of tool.actions) {
        let name = `${prefix}__${action.name}`.slice(0, 64);
        for (let n = 2; used.has(name); n++) name = `${prefix}__${action.name}`.slice(0, 60) + `_${n}`;
        used.add(name);
        out.push({ functionName: name, tool, action });
      }
    }
    return out;
  }

  async definitions(tools: readonly AiTool[], signal?: AbortSignal): Promise<AiToolDefinition[]> {
    return Promise.all(
      this.resolve(tools).map(async ({ functionName, tool, action }) => {
        const conf = this.open(action).conf ?? {};
        let description = typeof conf.description === 'string' ? conf.description : (tool.desc ?? `${tool.name}: ${action.name}`);
        let parameters = action.type === 'knowledge' ? knowledgeParameters : isObject(conf.parameters) ? (conf.parameters as JsonSchemaObject) : emptyParameters;
        if (action.type === 'knowledge' && typeof conf.description !== 'string') description = `${tool.desc ?? tool.name}: searches a knowledge base and answers passages with citations (source, page, headings); cite them.`;
        if (action.type === 'mcp' && !isObject(conf.parameters)) {
          const declared = await describeMcpTool(conf as unknown as McpActionConf, this.callOptions(signal));
          parameters = declared.parameters;
          if (typeof conf.description !== 'string') description = declared.description;
        }
        return { name: functionName, description, parameters };
      }),
    );
  }

  /** Runs an action by its function name (from `resolve`) or, with one tool, by its action name. */
  async call(tools: readonly AiTool[], name: string, args: unknown, context: ActionContext = {}, signal?: AbortSignal): Promise<unknown> {
    const resolved = this.resolve(tools);
    const match = resolved.find((r) => r.functionName === name) ?? (tools.length === 1 ? resolved.find((r) => r.action.name === name) : undefined);
    if (!match) throw new TrellisError('not_found', 'tool_action_not_found', `No action named ${name} among the tools offered.`);
    return this.run(match.action, args, match.action.type === 'knowledge' ? { ...context, ownerId: match.tool.owner.id } : context, signal);
  }

  async run(action: AiToolAction, args: unknown, context: ActionContext, signal?: AbortSignal): Promise<unknown> {
    const conf = this.open(action).conf ?? {};
    if (action.type === 'http') {
      const scope = { ...(isObject(args) ? args : {}), args: args ?? {}, content: context.content ?? '', convId: context.convId ?? '', msgId: context.msgId ?? '', data: context.data ?? {} };
      return runHttpAction(
        { method: String(conf.method ?? 'GET'), url: String(conf.url), headers: (conf.headers ?? {}) as Record<string, string>, body: conf.body, timeoutMs: conf.timeoutMs as number | undefined, response: conf.response as HttpActionConf['response'] },
        scope,
        { ...this.callOptions(signal), maxResponseBytes: this.config.tools.maxResponseBytes, idempotencyKey: context.idempotencyKey },
      );
    }
    if (action.type === 'mcp') return runMcpAction(conf as unknown as McpActionConf, args, { ...this.callOptions(signal), idempotencyKey: context.idempotencyKey });
    if (action.type === 'knowledge') return this.retrieve(conf, args, context, signal);
    throw new TrellisError('bad_request', 'invalid_tool_action', `Unknown action type ${action.type}.`);
  }

  private async retrieve(conf: Record<string, unknown>, args: unknown, context: ActionContext, signal?: AbortSignal): Promise<unknown> {
    const container = this.kernel?.container;
    const knowledge = container?.isBound(knowledgeRetrieverServiceIdentifier) ? container.get(knowledgeRetrieverServiceIdentifier) : undefined;
    if (!knowledge) throw new TrellisError('unavailable', 'knowledge_not_configured', 'Knowledge bases are not loaded in this deployment (the knowledge module).');
    if (!context.ownerId) throw new TrellisError('bad_request', 'invalid_tool_action', 'A knowledge action runs for its tool\'s owner.');
    const input = isObject(args) ? args : {};
    const query = typeof input.query === 'string' && input.query.trim() ? input.query : (context.content ?? '');
    if (!query.trim()) throw new TrellisError('bad_request', 'knowledge_empty_query', 'A knowledge action needs a query.');
    const limit = typeof input.limit === 'number' && Number.isInteger(input.limit) ? Math.min(Math.max(input.limit, 1), 20) : typeof conf.limit === 'number' ? conf.limit : undefined;
    const passages = await knowledge.retrieve({ userId: context.ownerId, baseId: String(conf.knowledgeBase), query, limit, mode: conf.mode as 'hybrid' | undefined, minScore: conf.minScore as number | undefined, filter: conf.filter, signal });
    return { query, passages: passages.map((passage, index) => ({ ref: index + 1, text: passage.text, score: passage.score, citation: passage.citation })) };
  }

  private callOptions(signal?: AbortSignal) {
    return { guard: this.guard, timeoutMs: this.config.tools.timeoutMs, signal };
  }
}
