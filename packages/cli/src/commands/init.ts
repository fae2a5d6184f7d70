import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { CliError } from '../config-loader.js';
import { cliPackageRoot, cliVersion } from '../package-info.js';

interface InitFlags {
  force?: boolean;
  name?: string;
}

/** Template files (under templates/init) and where each goes. `gitignore` is renamed: npm drops `.gitignore` from packages. */
const templateFiles: ReadonlyArray<{ from: string; to: string }> = [
  { from: 'server.mjs', to: 'server.mjs' },
  { from: 'trellis.modules.mjs', to: 'trellis.modules.mjs' },
  { from: 'modules/hello.mjs', to: 'modules/hello.mjs' },
  { from: 'trellis.config.json', to: 'trellis.config.json' },
  { from: 'README.md', to: 'README.md' },
  { from: 'gitignore', to: '.gitignore' },
];

export const initCommand = {
  register(program: Command): void {
    program
      .command('init')
      .description('Scaffold a host project: package.json, trellis.config.json, server.mjs with a module of your own, README.')
      .argument('<dir>', 'folder to create (or an empty existing one)')
      .option('-f, --force', 'write into a non-empty folder, overwriting the files the scaffold writes (others are left alone)')
      .option('--name <name>', 'package name (default: the folder name)')
      .addHelpText('after', '\nExample:\n  trellis init my-host && cd my-host && npm install && npm start')
      .action((dir: string, flags: InitFlags) => init(dir, flags));
  },
};

async function init(dir: string, flags: InitFlags): Promise<void> {
  const target = resolve(dir);
  const existing = await stat(target).catch(() => undefined);
  if (existing && !existing.isDirectory()) throw new CliError(`${target} exists and is not a folder.`);
  if (existing && !flags.force) {
    const entries = await readdir(target);
    if (entries.length > 0) throw new CliError(`${target} is not empty (${entries.length} entries). Choose an empty folder, or add --force to write the scaffold's files into it.`);
  }
  const name = flags.name ?? packageName(basename(target));
  if (!/^(@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/.test(name) || name.length > 214) {
    throw new CliError(`"${name}" is not a valid npm package name: use --name with lowercase letters, digits, "-", "." or "_".`, 2);
  }

  const templates = join(cliPackageRoot(), 'templates', 'init');
  const written: string[] = [];
  const write = async (to: string, text: string) => {
    const file = join(target, to);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(file, text);
    written.push(to);
  };

  await write('package.json', `${JSON.stringify(packageJson(name), null, 2)}\n`);
  for (const file of templateFiles) {
    const text = await readFile(join(templates, file.from), 'utf8');
    await write(file.to, text.replaceAll('{{name}}', name).replaceAll('{{version}}', cliVersion()));
  }

  const shown = relative(process.cwd(), target) || '.';
  process.stdout.write(
    [
      `Created ${name} in ${target}:`,
      ...written.map((file) => `  ${file}`),
      '',
      'Next:',
      ...(shown === '.' ? [] : [`  cd ${shown.includes(' ') ? JSON.stringify(shown) : shown}`]),
      '  npm install',
      '  npm start',
      '',
    ].join('\n'),
  );
}

function packageName(folder: string): string {
  const cleaned = folder
    .toLowerCase()
    .replace(/[^a-z0-9-._~]+/g, '-')
    .replace(/^[-._]+|-+$/g, '');
  return cleaned || 'trellis-host';
}

function packageJson(name: string): Record<string, unknown> {
  const range = `^${cliVersion()}`;
  return {
    name,
    version: '0.1.0',
    private: true,
    type: 'module',
    engines: { node: '>=20.19' },
    scripts: {
      start: 'node server.mjs',
      trellis: 'trellis',
      migrate: 'trellis migrate up',
      doctor: 'trellis doctor',
    },
    dependencies: {
      '@trellis/cli': range,
      '@trellis/core': range,
      '@trellis/host': range,
    },
  };
}
