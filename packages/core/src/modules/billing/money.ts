/** Digits after the decimal point of a currency (2 for usd, 0 for jpy), from the runtime's ICU data. */
export function currencyDigits(currency: string): number {
  try {
    return new Intl.NumberFormat('en', { style: 'currency', currency: currency.toUpperCase() }).resolvedOptions().maximumFractionDigits ?? 2;
  } catch {
    return 2;
  }
}

/** `1999, 'usd'` → `19.99 USD`. Amounts are integers in the currency's minor unit. */
export function formatAmount(amount: number, currency: string): string {
  const digits = currencyDigits(currency);
  return `${(amount / 10 ** digits).toFixed(digits)} ${currency.toUpperCase()}`;
}
