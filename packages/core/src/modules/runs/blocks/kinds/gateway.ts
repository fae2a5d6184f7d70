import { TrellisError } from '../../../../kernel/errors.js';

/** The error of an LLM or tool block in a deployment without the AI gateway. */
export const noGateway = () =>
  new TrellisError('unavailable', 'ai_gateway_not_configured', 'No AI gateway is bound in this deployment (the ai module), so LLM and tool blocks cannot run.');
