import { describe } from 'vitest';
import { checkEmbedding } from '../support/embedding-checks.js';
import { startExpressExample } from './server.js';

describe('Trellis embedded in Express under /api', () => {
  checkEmbedding(startExpressExample, 'express');
});
