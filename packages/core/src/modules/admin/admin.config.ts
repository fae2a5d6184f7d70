import { s } from '../../kernel/config/schema.js';

export const adminConfigSchema = s.object({
  becomeTtlSeconds: s
    .int()
    .range(60, 3_600)
    .default(900)
    .describe('Lifetime of the JWT `POST /admin/user/{id}/become` issues (it carries the administrator as RFC 8693 `act`); at most one hour.'),
});
