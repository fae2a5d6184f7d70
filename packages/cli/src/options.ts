import { InvalidArgumentError, Option, type Command } from 'commander';

/** Adds the flags every kernel-booting command shares: --config, --database and --modules. */
export function withKernelOptions(command: Command): Command {
  return command
    .option('-c, --config <file>', 'configuration file (JSON or .js/.mjs); env TRELLIS_CONFIG; default ./trellis.config.json if present')
    .option('-d, --database <url>', 'sqlite:<path>, sqlite::memory: or postgres://...; env TRELLIS_DATABASE')
    .option('-m, --modules <file>', 'modules file (.mjs exporting [...coreModules, ...yours]); env TRELLIS_MODULES; default ./trellis.modules.mjs if present, else the built-in modules');
}

/** Adds the listening flags of `start`: --port, --host, --transport. */
export function withServerOptions(command: Command): Command {
  return command
    .option('-p, --port <port>', 'TCP port, 0 picks a free one; env TRELLIS_PORT (default 8080)', parsePort)
    .option('-H, --host <address>', 'interface to listen on; env TRELLIS_HOST (default 127.0.0.1)')
    .addOption(new Option('-t, --transport <name>', 'HTTP/WebSocket transport; env TRELLIS_TRANSPORT (default uws)').choices(['uws', 'node']));
}

export function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535) throw new InvalidArgumentError('expected an integer from 0 to 65535.');
  return port;
}

export function parsePositiveInt(value: string): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < 1) throw new InvalidArgumentError('expected a positive integer.');
  return n;
}
