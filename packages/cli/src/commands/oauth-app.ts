import type { Command } from 'commander';
import { CliError, type KernelFlags } from '../config-loader.js';
import { parsePositiveInt, withKernelOptions } from '../options.js';

interface CreateFlags extends KernelFlags {
  name: string;
  redirectUri: string[];
  scope?: string[];
  description?: string;
  homepageUrl?: string;
  logoUrl?: string;
  clientId?: string;
  json?: boolean;
}

interface ListFlags extends KernelFlags {
  search?: string;
  page?: number;
  pageSize?: number;
  json?: boolean;
}

interface StatusFlags extends KernelFlags {
  json?: boolean;
}

const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** `trellis oauth-app create|list|disable|enable`: OAuth app administration without the HTTP API. */
export const oauthAppCommand = {
  register(program: Command): void {
    const app = program.command('oauth-app').description('Manage OAuth client applications directly in the database.');

    withKernelOptions(app.command('create').description('Register an OAuth app and print its client_id.'))
      .requiredOption('-n, --name <name>', 'name shown on the consent page')
      .requiredOption('-r, --redirect-uri <uri>', 'a redirect URI (repeat for several); compared character for character', collect)
      .option('-s, --scope <scope>', 'a scope the app may request (repeat for several; default profile:read)', collect)
      .option('--description <text>', 'description shown on the consent page')
      .option('--homepage-url <url>', 'the app\'s home page')
      .option('--logo-url <url>', 'the app\'s logo (https)')
      .option('--client-id <id>', 'choose the client_id (3 to 64 of A-Z a-z 0-9 - . _ ~), e.g. to match oauth.mobileClientIds')
      .option('--json', 'print the app as JSON instead of its client_id')
      .addHelpText(
        'after',
        `
Redirect URIs: https, http on a loopback host, or a private-use scheme such as com.example.app:/cb.
Scopes: profile:read, chat:completions, mobile:full (only for oauth.mobileClientIds), or oauth.extraScopes.
Exits 1 when the client_id is taken, 2 when a value is invalid.

Examples:
  trellis oauth-app create --name "Notes" --redirect-uri https://notes.example/oauth/callback --scope profile:read
  trellis oauth-app create --name "iOS" --client-id trellis-ios --redirect-uri com.example.trellis:/cb --scope mobile:full`,
      )
      .action((flags: CreateFlags) => createApp(flags));

    withKernelOptions(app.command('list').description('List OAuth apps (deleted ones are left out).'))
      .option('--search <text>', 'part of the name or client_id (any case)')
      .option('--page <n>', 'page, from 1', parsePositiveInt)
      .option('--page-size <n>', 'apps per page (default 20, at most 100)', parsePositiveInt)
      .option('--json', 'print the page as JSON')
      .action((flags: ListFlags) => listApps(flags));

    withKernelOptions(app.command('disable').description('Disable an app and revoke every token it holds.'))
      .argument('<client_id>', 'the app to disable')
      .option('--json', 'print the app as JSON')
      .addHelpText('after', `\nA client_id that begins with "-" goes after "--": trellis oauth-app disable -- -my-app`)
      .action((clientId: string, flags: StatusFlags) => setStatus(clientId, 'disable', flags));

    withKernelOptions(app.command('enable').description('Enable a disabled app again (revoked tokens stay revoked).'))
      .argument('<client_id>', 'the app to enable')
      .option('--json', 'print the app as JSON')
      .addHelpText('after', `\nA client_id that begins with "-" goes after "--": trellis oauth-app enable -- -my-app`)
      .action((clientId: string, flags: StatusFlags) => setStatus(clientId, 'enable', flags));
  },
};

async function createApp(flags: CreateFlags): Promise<void> {
  const name = flags.name.trim();
  if (!name || name.length > 200) throw new CliError('--name must be 1 to 200 characters long.', 2);
  const [{ OAuthAppService, toAdminView }, { withKernel }] = await Promise.all([import('@trellis/core'), import('../kernel-runner.js')]);
  await withKernel(flags, async (kernel) => {
    const app = await domain(() =>
      kernel.get(OAuthAppService).create(kernel.fork(), {
        name,
        description: flags.description,
        redirect_uris: flags.redirectUri,
        scopes: flags.scope ?? ['profile:read'],
        homepage_url: flags.homepageUrl,
        logo_url: flags.logoUrl,
        client_id: flags.clientId,
      }),
    );
    process.stdout.write(flags.json ? `${JSON.stringify(toAdminView(app), null, 2)}\n` : `${app.clientId}\n`);
  });
}

async function listApps(flags: ListFlags): Promise<void> {
  if (flags.pageSize !== undefined && flags.pageSize > 100) throw new CliError('--page-size must be at most 100.', 2);
  const [{ OAuthAppService, paging, toAdminView }, { withKernel }] = await Promise.all([import('@trellis/core'), import('../kernel-runner.js')]);
  await withKernel(flags, async (kernel) => {
    const p = paging({ page: flags.page, pageSize: flags.pageSize });
    const { items, total } = await kernel.get(OAuthAppService).list(kernel.fork(), p, flags.search);
    if (flags.json) {
      process.stdout.write(`${JSON.stringify({ items: items.map(toAdminView), total, page: p.page, size: p.size }, null, 2)}\n`);
      return;
    }
    const rows = items.map((a) => [a.clientId, a.disabledAt ? 'disabled' : 'active', a.scopes.join(' '), a.name]);
    const header = ['CLIENT_ID', 'STATUS', 'SCOPES', 'NAME'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (cells: string[]) => cells.map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ');
    process.stdout.write(`${[line(header), ...rows.map(line)].join('\n')}\n`);
    if (total > p.offset + items.length) process.stdout.write(`(${items.length} of ${total}; --page ${p.page + 1} for more)\n`);
  });
}

async function setStatus(clientId: string, action: 'disable' | 'enable', flags: StatusFlags): Promise<void> {
  const [{ OAuthAppService, toAdminView }, { withKernel }] = await Promise.all([import('@trellis/core'), import('../kernel-runner.js')]);
  await withKernel(flags, async (kernel) => {
    const service = kernel.get(OAuthAppService);
    const em = kernel.fork();
    const app = await domain(async () => {
      const found = await service.getByClientId(em, clientId);
      return action === 'disable' ? service.disable(em, found.id) : service.enable(em, found.id);
    });
    process.stdout.write(flags.json ? `${JSON.stringify(toAdminView(app), null, 2)}\n` : `${app.clientId} ${action}d\n`);
  });
}

/** Runs a domain call, turning its errors into CLI errors: invalid values exit 2, the rest 1. */
async function domain<T>(work: () => Promise<T>): Promise<T> {
  const { isTrellisError } = await import('@trellis/core');
  try {
    return await work();
  } catch (error) {
    if (isTrellisError(error) && error.exposed) {
      throw new CliError(error.message, error.kind === 'validation' || error.kind === 'bad_request' ? 2 : 1);
    }
    throw error;
  }
}
