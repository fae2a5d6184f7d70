import { Command, CommanderError } from 'commander';
import { commands } from './commands/index.js';
import { CliError } from './config-loader.js';
import { cliVersion } from './package-info.js';

/** Exit codes: 0 success, 1 failure, 2 usage or configuration error. */
export const exitCodes = { ok: 0, failure: 1, usage: 2 } as const;

/** The `trellis` program with every registered command. Errors are thrown, never exit the process. */
export function createProgram(): Command {
  const program = new Command('trellis')
    .description('Scaffold, start and operate a Trellis host.')
    .version(cliVersion(), '-v, --version', 'print the version')
    .helpOption('-h, --help', 'show help for a command')
    .helpCommand('help [command]', 'show help for a command')
    .showHelpAfterError('(add --help for usage)')
    .exitOverride()
    .addHelpText(
      'after',
      `
Configuration comes from ./trellis.config.json (or --config), TRELLIS_* environment variables
and flags, in that order of precedence (flags win). See docs/configuration.md.

Exit codes: 0 success, 1 failure, 2 usage or configuration error.`,
    );
  for (const command of commands) command.register(program);
  return program;
}

/**
 * Runs the CLI on `argv` (as in process.argv) and resolves with the exit code, after printing any
 * error on stderr. `trellis start` resolves only when the server has stopped.
 */
export async function runCli(argv: readonly string[]): Promise<number> {
  const program = createProgram();
  try {
    await program.parseAsync([...argv]);
    return exitCodes.ok;
  } catch (error) {
    return reportError(error);
  }
}

/** Prints an error the way a shell user expects (one clear message, no stack) and picks the exit code. */
export function reportError(error: unknown): number {
  if (error instanceof CommanderError) {
    // Commander already printed its message (or the help text).
    if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version') return exitCodes.ok;
    if (error.code === 'commander.help') return error.exitCode === 0 ? exitCodes.ok : exitCodes.usage;
    return exitCodes.usage;
  }
  if (error instanceof CliError) {
    printError(error.message);
    return error.exitCode;
  }
  // Recognised by name so that `trellis --help` does not have to load @trellis/core.
  if (isNamedError<ConfigErrorLike>(error, 'ConfigError')) {
    printError(`Invalid configuration:\n${error.issues.map((issue) => `  - ${issue.path}: ${issue.message}`).join('\n')}`);
    return exitCodes.usage;
  }
  if (isNamedError<TrellisErrorLike>(error, 'TrellisError')) {
    const details = (error.details ?? []).map((d) => `\n  - ${d.field || '(input)'}: ${d.message}`).join('');
    printError(`${error.message} (${error.code})${details}`);
    return error.kind === 'validation' ? exitCodes.usage : exitCodes.failure;
  }
  const message = error instanceof Error ? error.message : String(error);
  printError(process.env['TRELLIS_DEBUG'] && error instanceof Error && error.stack ? error.stack : `${message}${process.env['TRELLIS_DEBUG'] ? '' : '\n(set TRELLIS_DEBUG=1 for the stack trace)'}`);
  return exitCodes.failure;
}

interface ConfigErrorLike extends Error {
  issues: Array<{ path: string; message: string }>;
}

interface TrellisErrorLike extends Error {
  kind: string;
  code: string;
  details?: Array<{ field: string; message: string }>;
}

function isNamedError<T extends Error>(error: unknown, name: string): error is T {
  return error instanceof Error && error.name === name;
}

function printError(message: string): void {
  process.stderr.write(`trellis: ${message}\n`);
}
