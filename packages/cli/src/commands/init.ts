import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { CliError } from '../config-loader.js';
import { cliPackageRoot, cliVersion } from '../package-info.js';

interface InitFlags {
  force?: boolean;
  name?: string;
  from?: string;
}

/** The packages a scaffold depends on: the CLI, the host, the kernel and the SQLite default. */
const scaffoldPackages = ['@trellis/cli', '@trellis/core', '@trellis/host', '@trellis/db-sqlite'] as const;

/** Where `--from` puts the package tarballs inside the scaffold (package.json refers to them with `file:`). */
const vendorDir = 'vendor/trellis';

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
      .option(
        '--from <path>',
        'depend on local package tarballs instead of registry versions: a folder of `pnpm pack` tarballs (trellis-*.tgz), or a Trellis checkout (its packages are packed; build it first). The tarballs are copied into vendor/trellis/.',
      )
      .addHelpText('after', '\nExamples:\n  trellis init my-host && cd my-host && npm install && npm start\n  trellis init my-host --from ../trellis   # from a built checkout, before the packages are published')
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

  // With --from, the tarballs are gathered before anything is written, so a bad path leaves no half scaffold.
  const gathered = flags.from ? await gatherTarballs(resolve(flags.from)) : undefined;
  const tarballs = gathered?.tarballs;
  if (gathered) {
    try {
      await mkdir(join(target, vendorDir), { recursive: true });
      for (const file of gathered.tarballs.values()) await copyFile(file, join(target, vendorDir, basename(file)));
      written.push(`${vendorDir}/ (${gathered.tarballs.size} package tarballs)`);
    } finally {
      await gathered.cleanup();
    }
  }
  await write('package.json', `${JSON.stringify(packageJson(name, tarballs), null, 2)}\n`);
  for (const file of templateFiles) {
    let text = (await readFile(join(templates, file.from), 'utf8')).replaceAll('{{name}}', name).replaceAll('{{version}}', cliVersion());
    if (file.from === 'README.md') text = readmeFor(text, tarballs);
    await write(file.to, text);
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

/**
 * The newest tarball of each `@trellis/*` package in `from`: a folder of `trellis-<name>-<version>.tgz`
 * files, or a checkout whose packages are packed (with pnpm, which rewrites `workspace:` ranges)
 * into a temporary folder first.
 */
async function gatherTarballs(from: string): Promise<{ tarballs: Map<string, string>; cleanup(): Promise<void> }> {
  const info = await stat(from).catch(() => undefined);
  if (!info?.isDirectory()) throw new CliError(`--from ${from}: not a folder (give a folder of trellis-*.tgz tarballs or a Trellis checkout).`, 2);
  let folder = from;
  let packed: string | undefined;
  const cleanup = async () => {
    if (packed) await rm(packed, { recursive: true, force: true });
  };
  if (existsSync(join(from, 'pnpm-workspace.yaml')) && existsSync(join(from, 'packages', 'cli', 'package.json'))) {
    if (!existsSync(join(from, 'packages', 'cli', 'dist', 'bin.js'))) {
      throw new CliError(`--from ${from}: the checkout is not built. Run \`pnpm install && pnpm build\` there first.`);
    }
    packed = folder = await mkdtemp(join(tmpdir(), 'trellis-pack-'));
  }
  try {
    if (packed) await packCheckout(from, packed);
    const found = new Map<string, { version: number[]; file: string }>();
    for (const entry of await readdir(folder)) {
      const match = /^trellis-([a-z0-9-]+?)-(\d+)\.(\d+)\.(\d+)(?:-[0-9A-Za-z.-]+)?\.tgz$/.exec(entry);
      if (!match) continue;
      const version = match.slice(2, 5).map(Number);
      const name = `@trellis/${match[1]}`;
      const seen = found.get(name);
      if (!seen || compareVersions(version, seen.version) > 0) found.set(name, { version, file: join(folder, entry) });
    }
    const missing = scaffoldPackages.filter((name) => !found.has(name));
    if (missing.length) throw new CliError(`--from ${from}: no tarball for ${missing.join(', ')} (expected files named like trellis-cli-${cliVersion()}.tgz).`, 2);
    return { tarballs: new Map([...found].map(([name, { file }]) => [name, file])), cleanup };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

function compareVersions(a: number[], b: number[]): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
  return 0;
}

/**
 * `pnpm pack` of every published package of the checkout into `destination` (pnpm from PATH, else
 * through npx). The console (`packages/console`, private) is not one: the host's build carries it.
 */
async function packCheckout(checkout: string, destination: string): Promise<void> {
  const args = ['-r', '--filter', './packages/**', '--filter', '!./packages/console', 'pack', '--pack-destination', destination];
  const pnpm = await run('pnpm', ['--version'], checkout).then(
    (result) => (result.code === 0 ? { command: 'pnpm', prefix: [] as string[] } : undefined),
    () => undefined,
  );
  const { command, prefix } = pnpm ?? { command: 'npx', prefix: ['-y', 'pnpm@10'] };
  const result = await run(command, [...prefix, ...args], checkout);
  if (result.code !== 0) throw new CliError(`--from ${checkout}: packing the checkout failed (${command} ${[...prefix, ...args].join(' ')}):\n${result.output.slice(-2000)}`);
}

function run(command: string, args: string[], cwd: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolveRun({ code, output }));
  });
}

/**
 * The scaffold's README. With `--from`, the packages are not on the registry: each `npm install
 * @trellis/<name>` line names the vendored tarball instead, and a paragraph says why.
 */
function readmeFor(text: string, tarballs?: ReadonlyMap<string, string>): string {
  if (!tarballs) return text.replace('{{vendored}}', '');
  const installLine = /^(npm install )(.*?)(\s+#.*)?$/gm;
  const rewritten = text.replace(installLine, (line, command: string, names: string, comment: string | undefined) => {
    const specs = names.trim().split(/\s+/);
    if (!specs.every((spec) => tarballs.has(spec))) return line;
    const replaced = `${command}${specs.map((spec) => `./${vendorDir}/${basename(tarballs.get(spec)!)}`).join(' ')}`;
    return comment ? `${replaced}${comment.replace(/^\s+/, '  ')}` : replaced;
  });
  return rewritten
    .replace(/`npm install (@trellis\/[a-z0-9-]+)`/g, (quoted, spec: string) => (tarballs.has(spec) ? `\`npm install ./${vendorDir}/${basename(tarballs.get(spec)!)}\`` : quoted))
    .replace(
      '{{vendored}}',
      `
This app was made with \`trellis init --from\`: its \`@trellis/*\` packages are the tarballs in
\`${vendorDir}/\` (they are not on the npm registry yet), so an adapter is added by its tarball,
as above. \`overrides\` in package.json points the packages' own \`@trellis/*\` dependencies
(\`@trellis/ai-sdk\` of the AI providers) at their tarballs too.
`,
    );
}

/** Vendored packages that other `@trellis/*` packages depend on but the scaffold does not list: npm must take them from the tarballs too. */
const transitivePackages = ['@trellis/ai-sdk', '@trellis/db-mikro-orm'] as const;

function packageJson(name: string, tarballs?: ReadonlyMap<string, string>): Record<string, unknown> {
  const range = `^${cliVersion()}`;
  const dependencies: Record<string, string> = {};
  for (const pkg of scaffoldPackages) dependencies[pkg] = tarballs ? `file:${vendorDir}/${basename(tarballs.get(pkg)!)}` : range;
  const overrides: Record<string, string> = {};
  for (const pkg of transitivePackages) if (tarballs?.has(pkg)) overrides[pkg] = `file:${vendorDir}/${basename(tarballs.get(pkg)!)}`;
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
    dependencies,
    ...(Object.keys(overrides).length ? { overrides } : {}),
  };
}
