import { TrellisError } from '../../../kernel/errors.js';
import { defineRoute, type RouteDefinition } from '../../../kernel/http/route.js';
import { addressParserServiceIdentifier, type AddressParser } from '../../../ports/address-parser.js';
import { AddressBody } from '../dto/address.dto.js';
import { parsedAddressSchema } from '../schemas.js';
import { toolAuth } from './auth.js';

export const addressRoutes: RouteDefinition[] = [
  defineRoute({
    method: 'POST',
    path: '/tool/home/address',
    summary: 'Recognise name, phone, province, city, district and detail in a Chinese address',
    description: 'Offline, on region data. Every field carries a confidence from 0 to 1; an ambiguous region (a district name found in several cities) comes with `candidates`.',
    tags: ['Tool service'],
    auth: toolAuth,
    body: AddressBody,
    validationError: { status: 400, code: 'validation_failed' },
    response: { schema: parsedAddressSchema },
    errors: { 400: 'address missing, empty or longer than 1000 characters (validation_failed)', 503: 'No address parser is bound (address_parser_not_configured)' },
    async handler(ctx) {
      let parser: AddressParser;
      try {
        parser = ctx.get(addressParserServiceIdentifier);
      } catch {
        throw new TrellisError('unavailable', 'address_parser_not_configured', 'No address parser is configured: bind @trellis/address-cn (the reference host does).');
      }
      return parser.parse(ctx.body.address);
    },
  }),
];
