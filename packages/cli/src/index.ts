export { createProgram, runCli, reportError, exitCodes } from './program.js';
export {
  CliError,
  defaultConfigFile,
  envNameForPath,
  environmentVariables,
  loadConfig,
  loadConfigWithSources,
  pathForEnvName,
  sourceOfPath,
  type KernelFlags,
  type LoadedConfig,
} from './config-loader.js';
export { CliConfigError, createCliHost, validateCliConfig, withKernel, type CliHost, type CliHostOptions } from './kernel-runner.js';
export { createCliLogger } from './cli-logger.js';
export { withKernelOptions, withServerOptions } from './options.js';
export { renderConfigurationDocs } from './config-docs.js';
export { checkPortFree, describeBindFailure, portProblem } from './port-check.js';
