import { AbstractPaymentProvider, type Checkout, type CheckoutRequest } from '../../../ports/payment-provider.js';
import { formatAmount } from '../money.js';

/**
 * The embedded default: no money moves through Trellis. An order stays pending until an
 * administrator confirms it was paid (bank transfer, invoice, cash) with
 * `POST /admin/orders/{id}/confirm` or `trellis billing confirm-order <id>`. The kernel warns at
 * start while it is in use.
 */
export class ManualPaymentProvider extends AbstractPaymentProvider {
  static override readonly identifier = 'manual';
  readonly manualConfirmation = true;

  async createCheckout(request: CheckoutRequest): Promise<Checkout> {
    const amount = formatAmount(request.amount, request.currency);
    return {
      reference: request.orderId,
      url: null,
      instructions: `Pay ${amount} for order ${request.orderId} as agreed with the operator; an administrator then confirms it (POST /admin/orders/${request.orderId}/confirm or \`trellis billing confirm-order ${request.orderId}\`).`,
      expiresAt: request.expiresAt,
    };
  }
}
