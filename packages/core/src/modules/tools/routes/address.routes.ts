import { TrellisError } from '../../../kernel/errors.js';
import { defineRoute, type RouteDefinition } from '../../../kernel/http/route.js';
import { addressParserServiceIdentifier, type AddressParser } from '../../../ports/address-parser.js';
import { AddressBody } from '../dto/address.dto.js';
import { toolAuth } from './auth.js';

const fieldSchema = {
  type: 'object',
  required: ['value', 'confidence'],
  properties: { value: { type: 'string', description: 'Empty when not found.' }, confidence: { type: 'number', minimum: 0, maximum: 1 } },
};

export const parsedAddressSchema = {
  type: 'object',
  required: ['name', 'phone', 'province', 'city', 'district', 'detail', 'postalCode', 'regionCode', 'candidates'],
  properties: {
    name: fieldSchema,
    phone: { ...fieldSchema, required: ['value', 'confidence', 'kind'], properties: { ...fieldSchema.properties, kind: { enum: ['mobile', 'landline', ''] } } },
    province: fieldSchema,
    city: fieldSchema,
    district: fieldSchema,
    detail: fieldSchema,
    postalCode: { type: 'string' },
    regionCode: { type: 'string', description: 'Division code (GB/T 2260) of the most specific level found.' },
    candidates: {
      type: 'array',
      description: 'Other readings of the region when it is ambiguous, best first; empty otherwise.',
      items: {
        type: 'object',
        required: ['province', 'city', 'district', 'code', 'confidence'],
        properties: { province: { type: 'string' }, city: { type: 'string' }, district: { type: 'string' }, code: { type: 'string' }, confidence: { type: 'number' } },
      },
    },
  },
};

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
