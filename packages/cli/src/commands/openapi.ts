import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { Command } from 'commander';
import { CliError, type KernelFlags } from '../config-loader.js';
import { withKernelOptions } from '../options.js';

interface OpenApiFlags extends KernelFlags {
  out?: string;
}

export const openapiCommand = {
  register(program: Command): void {
    withKernelOptions(
      program
        .command('openapi')
        .description('Print (or write) the OpenAPI 3.1 document of the API, built from the route table; no server starts and no database is opened.'),
    )
      .option('-o, --out <file>', 'write the document to this file instead of stdout')
      .addHelpText('after', '\nThe configuration matters: server.basePath and module options shape the document.\n\nExamples:\n  trellis openapi > openapi.json\n  trellis openapi --out docs/openapi.json')
      .action((flags: OpenApiFlags) => openapi(flags));
  },
};

async function openapi(flags: OpenApiFlags): Promise<void> {
  const { createCliHost } = await import('../kernel-runner.js');
  // The kernel is composed but never started or connected: nothing to stop afterwards.
  const { host } = await createCliHost(flags, { oneShot: true, secrets: 'read' });
  const document = host.kernel.openapi();
  const text = `${JSON.stringify(document, null, 2)}\n`;
  if (!flags.out) {
    process.stdout.write(text);
    return;
  }
  const file = resolve(flags.out);
  try {
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, text);
  } catch (error) {
    throw new CliError(`Cannot write ${file}: ${(error as Error).message}`);
  }
  const paths = Object.keys((document['paths'] as Record<string, unknown> | undefined) ?? {}).length;
  process.stdout.write(`Wrote the OpenAPI document (${paths} paths) to ${file}\n`);
}
