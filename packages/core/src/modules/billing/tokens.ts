import type { ServiceIdentifier } from 'inversify';
import type { BillingConfig } from './billing.config.js';

/** The validated `billing` configuration section. */
export const billingConfigServiceIdentifier: ServiceIdentifier<BillingConfig> = Symbol.for('@trellis/core/billing/Config');
