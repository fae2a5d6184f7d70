import { describe } from 'vitest';
import { checkEmbedding } from '../support/embedding-checks.js';
import { startFastifyExample } from './server.js';

describe('Trellis embedded in Fastify under /api', () => {
  checkEmbedding(startFastifyExample, 'fastify');
});
