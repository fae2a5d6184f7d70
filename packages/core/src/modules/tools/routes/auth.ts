import type { CredentialKind } from '../../../kernel/auth/principal.js';

/** The tool service takes a bearer token: a JWT, an API key, an agent token or an anonymous token (`tan_`). */
export const toolAuth: readonly CredentialKind[] = ['jwt', 'api_key', 'agent_token', 'anonymous'];
