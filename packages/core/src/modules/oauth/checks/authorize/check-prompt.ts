import { InvalidRequest } from '../../oauth-errors.js';
import type { AuthorizationCheck, PromptValue } from './authorization-request.js';

const values: ReadonlySet<string> = new Set<PromptValue>(['login', 'consent', 'select_account', 'none']);

/**
 * prompt is optional: space-separated login, consent, select_account, none. An unknown value, or
 * none together with any other value, is `invalid_request`.
 */
export const checkPrompt: AuthorizationCheck = {
  name: 'prompt',
  rule: 'spec GET /oauth/authorize (prompt); OpenID Connect Core §3.1.2.1',
  run(request) {
    const raw = request.params.prompt;
    if (raw === undefined) return;
    const list = raw.split(' ').filter((value) => value.length > 0);
    if (list.length === 0) throw new InvalidRequest('prompt names no value.');
    for (const value of list) {
      if (!values.has(value)) throw new InvalidRequest('prompt holds a value other than login, consent, select_account and none.');
      request.prompt.add(value as PromptValue);
    }
    if (request.prompt.has('none') && request.prompt.size > 1) throw new InvalidRequest('prompt=none cannot be combined with other values.');
  },
};
