import { userInfo } from 'node:os';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { CliError, type KernelFlags } from '../config-loader.js';
import { parsePositiveInt, withKernelOptions } from '../options.js';

interface JsonFlags extends KernelFlags {
  json?: boolean;
}

interface OrdersFlags extends JsonFlags {
  status?: string;
  team?: string;
  limit?: number;
}

interface CouponFlags extends JsonFlags {
  code: string;
  percentOff?: number;
  amountOff?: number;
  expiresAt?: Date;
  maxRedemptions?: number;
}

const out = (line: string) => process.stdout.write(`${line}\n`);

function parseInstant(value: string): Date {
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw new InvalidArgumentError('expected an ISO 8601 date or instant, e.g. 2027-01-01T00:00:00Z.');
  return date;
}

/** The operator's name recorded on confirmed orders (`cli:<login>`). */
function operator(): string {
  try {
    return userInfo().username || 'operator';
  } catch {
    return 'operator';
  }
}

export function register(program: Command): void {
  const billing = program
    .command('billing')
    .description('Operate billing: confirm manual payments, list orders, manage coupons, run renewals.')
    .addHelpText(
      'after',
      `
Examples:
  trellis billing orders --status pending
  trellis billing confirm-order 0193a8e2-7c4a-7d1e-9b1f-2a6c3e5d7f90
  trellis billing coupon create --code LAUNCH20 --percent-off 20 --max-redemptions 100
  trellis billing renew`,
    );

  withKernelOptions(billing.command('confirm-order').argument('<orderId>', 'id of a pending or expired order').description('Mark a manual-payment order paid and apply it (plan or credits).'))
    .option('--json', 'print the order as JSON')
    .addHelpText('after', '\nOnly orders of the manual payment provider can be confirmed (Stripe orders are confirmed by Stripe).\nConfirming a paid order again changes nothing. Exits 1 when the order is missing or cannot be paid.')
    .action((orderId: string, flags: JsonFlags) => confirmOrder(orderId, flags));

  withKernelOptions(billing.command('orders').description('List payment orders, newest first.'))
    .addOption(new Option('-s, --status <status>', 'only orders in this status').choices(['pending', 'paid', 'expired', 'canceled']))
    .option('--team <teamId>', 'only orders of this team')
    .option('-n, --limit <n>', 'how many (at most 100)', parsePositiveInt, 20)
    .option('--json', 'print { items, total } as JSON')
    .action((flags: OrdersFlags) => listOrders(flags));

  withKernelOptions(billing.command('renew').description('Run the renewal and expiry jobs once (for cron, when no host runs them).'))
    .option('--json', 'print the counts as JSON')
    .action((flags: JsonFlags) => renew(flags));

  const coupon = billing.command('coupon').description('Manage coupons.');
  withKernelOptions(coupon.command('create').description('Create a coupon; give exactly one of --percent-off and --amount-off.'))
    .requiredOption('--code <code>', '3 to 64 letters, digits, _ or - (case-insensitive)')
    .option('--percent-off <n>', 'percent taken off (1 to 100)', parsePositiveInt)
    .option('--amount-off <n>', 'amount taken off, in the minor unit of billing.currency (cents)', parsePositiveInt)
    .option('--expires-at <instant>', 'ISO 8601 instant after which it no longer applies', parseInstant)
    .option('--max-redemptions <n>', 'orders that may hold it at once', parsePositiveInt)
    .option('--json', 'print the coupon as JSON')
    .action((flags: CouponFlags) => createCoupon(flags));
  withKernelOptions(coupon.command('list').description('List enabled coupons.'))
    .option('--all', 'include disabled coupons')
    .option('--json', 'print { items, total } as JSON')
    .action((flags: JsonFlags & { all?: boolean }) => listCoupons(flags));
  withKernelOptions(coupon.command('disable').argument('<couponId>', 'coupon id').description('Disable a coupon (orders already placed keep their discount).'))
    .option('--json', 'print the coupon as JSON')
    .action((id: string, flags: JsonFlags) => disableCoupon(id, flags));
}

export const billingCommand = { register };

async function confirmOrder(orderId: string, flags: JsonFlags): Promise<void> {
  const [{ OrderService, toOrderView, formatAmount }, { withKernel }] = await Promise.all([import('@trellis/core'), import('../kernel-runner.js')]);
  await withKernel(flags, async (kernel) => {
    const { order, alreadyPaid } = await kernel.get(OrderService).confirmManually(kernel.fork(), orderId, { kind: 'cli', operator: operator() });
    if (flags.json) return out(JSON.stringify({ order: toOrderView(order), alreadyPaid }, null, 2));
    out(
      alreadyPaid
        ? `Order ${order.id} was already paid (${order.paidVia}); nothing changed.`
        : `Order ${order.id} is paid: ${order.description}, ${formatAmount(order.amount, order.currency)}, team ${order.team.id}.`,
    );
  });
}

async function listOrders(flags: OrdersFlags): Promise<void> {
  const [{ OrderService, toOrderView, formatAmount, MAX_PAGE_SIZE }, { withKernel }] = await Promise.all([import('@trellis/core'), import('../kernel-runner.js')]);
  if (flags.team !== undefined && !/^[0-9a-f-]{36}$/i.test(flags.team)) throw new CliError(`--team: "${flags.team}" is not a team id (UUID).`, 2);
  await withKernel(flags, async (kernel) => {
    const page = await kernel.get(OrderService).list(kernel.fork(), {
      status: flags.status as never,
      teamId: flags.team,
      size: Math.min(flags.limit ?? 20, MAX_PAGE_SIZE),
    });
    if (flags.json) return out(JSON.stringify({ items: page.items.map(toOrderView), total: page.total }, null, 2));
    for (const o of page.items) {
      out(`${o.id}  ${o.status.padEnd(8)} ${o.kind.padEnd(8)} ${formatAmount(o.amount, o.currency).padStart(12)}  ${o.provider.padEnd(7)} ${o.createdAt.toISOString()}  ${o.description}`);
    }
    out(`${page.items.length} of ${page.total} order(s).`);
  });
}

async function renew(flags: JsonFlags): Promise<void> {
  const [{ BillingJobs }, { withKernel }] = await Promise.all([import('@trellis/core'), import('../kernel-runner.js')]);
  await withKernel(flags, async (kernel) => {
    const jobs = kernel.get(BillingJobs);
    const renewal = await jobs.renew(kernel.fork());
    const expiry = await jobs.expire(kernel.fork());
    if (flags.json) return out(JSON.stringify({ ...renewal, expiredOrders: expiry.orders, releasedReservations: expiry.reservations }, null, 2));
    out(
      `Renewed ${renewal.renewed} subscription(s), started ${renewal.creditMonths} credit month(s), ended ${renewal.endedUnpaid} unpaid subscription(s); expired ${expiry.orders} order(s), released ${expiry.reservations} reservation(s).`,
    );
  });
}

async function createCoupon(flags: CouponFlags): Promise<void> {
  if ((flags.percentOff === undefined) === (flags.amountOff === undefined)) throw new CliError('Give exactly one of --percent-off and --amount-off.', 2);
  if (flags.percentOff !== undefined && flags.percentOff > 100) throw new CliError('--percent-off must be at most 100.', 2);
  if (!/^[A-Za-z0-9_-]{3,64}$/.test(flags.code)) throw new CliError('--code must be 3 to 64 letters, digits, _ or -.', 2);
  const [{ CouponService, toCouponView }, { withKernel }] = await Promise.all([import('@trellis/core'), import('../kernel-runner.js')]);
  await withKernel(flags, async (kernel) => {
    const coupon = await kernel.get(CouponService).create(
      kernel.fork(),
      { code: flags.code, percentOff: flags.percentOff, amountOff: flags.amountOff, expiresAt: flags.expiresAt, maxRedemptions: flags.maxRedemptions },
      null,
    );
    out(flags.json ? JSON.stringify(toCouponView(coupon), null, 2) : `${coupon.id}  ${coupon.code}`);
  });
}

async function listCoupons(flags: JsonFlags & { all?: boolean }): Promise<void> {
  const [{ CouponService, toCouponView, MAX_PAGE_SIZE }, { withKernel }] = await Promise.all([import('@trellis/core'), import('../kernel-runner.js')]);
  await withKernel(flags, async (kernel) => {
    const page = await kernel.get(CouponService).list(kernel.fork(), { size: MAX_PAGE_SIZE, includeDisabled: flags.all });
    if (flags.json) return out(JSON.stringify({ items: page.items.map(toCouponView), total: page.total }, null, 2));
    for (const c of page.items) {
      const off = c.percentOff !== null ? `${c.percentOff}%` : `${c.amountOff} off`;
      const cap = c.maxRedemptions !== null ? `${c.redemptions}/${c.maxRedemptions}` : `${c.redemptions}`;
      out(`${c.id}  ${c.code.padEnd(20)} ${off.padEnd(10)} redeemed ${cap}${c.expiresAt ? `  expires ${c.expiresAt.toISOString()}` : ''}${c.disabledAt ? '  disabled' : ''}`);
    }
    out(`${page.items.length} of ${page.total} coupon(s).`);
  });
}

async function disableCoupon(id: string, flags: JsonFlags): Promise<void> {
  const [{ CouponService, toCouponView }, { withKernel }] = await Promise.all([import('@trellis/core'), import('../kernel-runner.js')]);
  await withKernel(flags, async (kernel) => {
    const coupon = await kernel.get(CouponService).disable(kernel.fork(), id);
    out(flags.json ? JSON.stringify(toCouponView(coupon), null, 2) : `Coupon ${coupon.code} is disabled.`);
  });
}
