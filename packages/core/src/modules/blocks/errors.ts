import { TrellisError } from '../../kernel/errors.js';

export const blockNotFound = () => new TrellisError('not_found', 'block_not_found', 'No such block, or you have no access to it.');

export const blockAccessDenied = (wanted: string) =>
  new TrellisError('forbidden', 'block_access_denied', `You need the ${wanted} permission in the block's project (owner, or a member of its team).`);

export const blockNameTaken = (name: string) => new TrellisError('conflict', 'block_name_taken', `The project already has a block named "${name}" (blocks in the trash keep their names).`);

export const blockNotInTrash = () => new TrellisError('not_found', 'block_not_in_trash', 'The block is not in the trash.');

export const deploymentNotFound = () => new TrellisError('not_found', 'deployment_not_found', 'The block has no deployed version yet: deploy it first (POST /block/:blockId/deploy).');

export const blockVersionNotFound = (version: string) => new TrellisError('not_found', 'block_version_not_found', `The block has no deployed version "${version}".`);

export const blockVersionTaken = (version: string) => new TrellisError('conflict', 'block_version_exists', `Version "${version}" is already deployed; versions are immutable. GET /block/:blockId/next-version gives a free one.`);

export const deploymentAccessDenied = () => new TrellisError('forbidden', 'deployment_access_denied', "The deployment's access does not let you call it.");

export const deploymentAuthRequired = () =>
  new TrellisError('unauthenticated', 'authentication_required', 'This deployment is not public: send a bearer credential, or its deployment token in X-Deployment-Token.', {
    headers: { 'www-authenticate': 'Bearer' },
  });
