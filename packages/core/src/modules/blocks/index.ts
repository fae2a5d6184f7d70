export { blocksModule } from './blocks.module.js';
export { Block, BlockSchema, blockTypes, deploymentAccessLevels, type BlockType, type DeploymentAccess, type DeploymentInput } from './entities/block.entity.js';
export { BlockVersion, BlockVersionSchema } from './entities/block-version.entity.js';
export { BlockService, BLOCK_DOC_TYPE, type BlockRunTarget, type CreateBlockInput, type UpdateBlockInput, loadBlock } from './services/block.service.js';
export { DeploymentService, DEPLOYMENT_TOKEN_HEADER, deploymentCallerOf, type DeploymentCaller, type DeploymentSettings } from './services/deployment.service.js';
export { compareVersions, highestVersion, nextVersion, VERSION_PATTERN } from './services/versions.js';
export { deploymentBudgetsServiceIdentifier, projectRunsServiceIdentifier, type DeploymentBudgets, type ProjectRuns, type ProjectRunSummary } from './project-runs.js';
export { blockAuth } from './routes.js';
export { toBlockView, toBlockViews, toBlockVersionView, toDeploymentView, toDeploymentDetail, blockStatus, type BlockStatus } from './views.js';
export { blockSchema, blockWithContentSchema, type BlockView, type BlockVersionView, type DeploymentView } from './schemas.js';
export * as blockErrors from './errors.js';
// Used by other modules (added by scripts/module-doors.ts; keep or sort by hand as you like)
export { BidParams, BudgetDto, MAX_BUDGET, PageParams } from './dto/block.dto.js';
export { blockNotFound, deploymentNotFound } from './errors.js';
