import type { Command } from 'commander';
import { CliError, type KernelFlags } from '../config-loader.js';
import { withKernelOptions } from '../options.js';

interface UserCreateFlags extends KernelFlags {
  email: string;
  password?: string;
  passwordStdin?: boolean;
  name?: string;
  siteAdmin?: boolean;
  developer?: boolean;
  administrator?: boolean;
  json?: boolean;
}

export const userCommand = {
  register(program: Command): void {
    const user = program.command('user').description('Manage user accounts directly in the database.');
    withKernelOptions(user.command('create').description('Create a user (with a personal team) and print its id.'))
      .requiredOption('-e, --email <email>', 'email address (the login name)')
      .option('--password <password>', 'password (visible to other local users in the process list; prefer --password-stdin)')
      .option('--password-stdin', 'read the password from standard input (first line)')
      .option('-n, --name <name>', 'display name (default: the part of the email before @)')
      .option('--site-admin', 'grant site administration (site:admin)')
      .option('--developer', 'grant the developer role')
      .option('--administrator', 'grant the administrator role')
      .option('--json', 'print the created user as JSON instead of its id')
      .addHelpText(
        'after',
        `
Pending migrations are applied first unless database.migrateOnStart is false.
Exits 1 when the email is already taken, 2 when a value is invalid.

Examples:
  trellis user create --email ada@example.com --password 'correct horse battery' --site-admin
  printf '%s\\n' "$PASSWORD" | trellis user create --email ops@example.com --password-stdin --developer`,
      )
      .action((flags: UserCreateFlags) => createUser(flags));
  },
};

async function createUser(flags: UserCreateFlags): Promise<void> {
  const [{ toUserView, UserService }, { isEmail }, { withKernel }] = await Promise.all([import('@trellis/core'), import('class-validator'), import('../kernel-runner.js')]);
  const email = flags.email.trim();
  if (!isEmail(email) || email.length > 320) throw new CliError(`--email: "${flags.email}" is not a valid email address.`, 2);
  if (flags.password !== undefined && flags.passwordStdin) throw new CliError('Give either --password or --password-stdin, not both.', 2);
  const password = flags.passwordStdin ? await readFirstLine(process.stdin) : flags.password;
  if (password === undefined) throw new CliError('A password is required: --password <password> or --password-stdin.', 2);
  if (password.length > 1024) throw new CliError('The password must be at most 1024 characters long.', 2);
  const name = flags.name?.trim();
  if (flags.name !== undefined && (!name || name.length > 200)) throw new CliError('--name must be 1 to 200 characters long.', 2);

  await withKernel(flags, async (kernel) => {
    const user = await kernel.get(UserService).create(kernel.fork(), {
      email,
      password,
      name,
      isSiteAdmin: flags.siteAdmin ?? false,
      isDeveloper: flags.developer ?? false,
      isAdministrator: flags.administrator ?? false,
    });
    if (flags.json) {
      process.stdout.write(`${JSON.stringify(toUserView(user), null, 2)}\n`);
    } else {
      process.stdout.write(`${user.id}\n`);
    }
  });
}

async function readFirstLine(stream: NodeJS.ReadableStream): Promise<string> {
  let text = '';
  for await (const chunk of stream) {
    text += chunk.toString();
    if (text.includes('\n')) break;
  }
  return text.split(/\r?\n/)[0] ?? '';
}
