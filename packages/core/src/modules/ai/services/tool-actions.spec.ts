import { describe, expect, it } from 'vitest';
import { renderJson, renderText } from './template.js';
import { priceOf } from './ai-gateway.service.js';
import { renderUrl } from './http-action.js';

describe('templates', () => {
  const context = { city: 'São Paulo', args: { n: 3, tags: ['a'] }, data: { deep: { x: true } } };
  it('renders text, encodes URL parts and keeps JSON types for whole placeholders', () => {
    expect(renderText('https://x/w?c={{ city }}&n={{args.n}}', context, encodeURIComponent)).toBe('https://x/w?c=S%C3%A3o%20Paulo&n=3');
    expect(renderText('{{missing}}|{{args.tags}}', context)).toBe('|["a"]');
    expect(renderJson({ n: '{{args.n}}', t: 'in {{city}}', list: ['{{data.deep}}'], keep: 5 }, context)).toEqual({ n: 3, t: 'in São Paulo', list: [{ x: true }], keep: 5 });
    expect(renderJson('{{__proto__.constructor}}', context)).toBeNull();
  });

  it('inserts a placeholder that starts a URL as it is (a base URL), and encodes the others', () => {
    const args = { base: 'http://127.0.0.1:8080/v1', q: 'a b/c' };
    expect(renderUrl('{{base}}/items?q={{q}}', args)).toBe('http://127.0.0.1:8080/v1/items?q=a%20b%2Fc');
    expect(renderUrl('https://x/{{base}}', args)).toBe('https://x/http%3A%2F%2F127.0.0.1%3A8080%2Fv1');
  });
});

describe('pricing', () => {
  it('charges whole credits per 1,000 tokens, rounded up', () => {
    expect(priceOf({ input: 2, output: 4 }, { inputTokens: 2000, outputTokens: 500 })).toBe(6);
    expect(priceOf({ input: 1, output: 1 }, { inputTokens: 1, outputTokens: 0 })).toBe(1);
    expect(priceOf({ input: 1, output: 1 }, { inputTokens: 0, outputTokens: 0 })).toBe(0);
    expect(priceOf({ input: 0.5, output: 0 }, { inputTokens: 4000, outputTokens: 100 })).toBe(2);
  });
});
