import fc from 'fast-check';
import { normalizeDocument, type DocumentContent, type JsonObject, type RichMark, type RichNode } from './rich-text.js';

/**
 * fast-check generators of rich-text documents for property tests: nested blocks, text with
 * marks (with and without attrs), inline nodes, and strings full of the characters markdown-ir
 * must escape. Results are in normal form.
 */
const tricky = fc.constantFrom('\\', '[', ']', '{', '}', ':', ':::', '//', '\n', ' ', '"', '=', '\r', '`', '*', 'é', '中', '😀', '\t');
const unit = fc.oneof(tricky, fc.string({ unit: 'grapheme', minLength: 1, maxLength: 3 }));
// eslint-disable-next-line no-control-regex -- U+0000 is exactly what is refused
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
const safe = (s: string) => s.replace(UNSTORABLE, '');
/** Removes what the store refuses (U+0000, unpaired surrogates, the key `__proto__`) from a JSON value. */
const sanitize = (value: unknown): unknown => {
  if (typeof value === 'string') return safe(value);
  if (Array.isArray(value)) return value.map(sanitize);
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).filter(([k]) => k !== '__proto__').map(([k, v]) => [safe(k), sanitize(v)]));
  return value;
};
export const richText = fc.array(unit, { minLength: 1, maxLength: 12 }).map((parts) => safe(parts.join(''))).filter((s) => s.length > 0);

const typeName = fc.oneof(
  fc.constantFrom('paragraph', 'heading', 'codeBlock', 'bulletList', 'listItem', 'blockquote', 'table', 'tableRow', 'tableCell', 'x-custom', 'ns:node', 'a.b'),
  fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,6}$/),
).filter((t) => t !== 'text' && t !== 'doc');
const markName = fc.constantFrom('bold', 'italic', 'code', 'link', 'strike', 'comment-mark', 'highlight');

/** A JSON value as a document holds it: through JSON once (no -0, which JSON writes as 0), keys sanitized. */
const jsonData: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 2 }).map((v) => sanitize(JSON.parse(JSON.stringify(v))));
const attrValue: fc.Arbitrary<unknown> = fc.oneof(
  jsonData,
  richText,
  fc.constant(null),
);
const attrs: fc.Arbitrary<JsonObject> = fc.dictionary(fc.oneof(fc.constantFrom('id', 'name', 'level', 'language', 'href'), fc.string({ minLength: 1, maxLength: 5 }).map(safe).filter((k) => k.length > 0 && k !== '__marks')), attrValue, { maxKeys: 4 }) as fc.Arbitrary<JsonObject>;
const mark: fc.Arbitrary<RichMark> = fc.record({ type: markName, attrs: fc.option(attrs, { nil: undefined }) }, { requiredKeys: ['type'] });
const marks = fc.option(fc.array(mark, { maxLength: 3 }), { nil: undefined });

const textNode: fc.Arbitrary<RichNode> = fc.record({ type: fc.constant('text'), text: richText, marks }, { requiredKeys: ['type', 'text'] });
const inlineAtom: fc.Arbitrary<RichNode> = fc.record(
  { type: fc.constantFrom('hardBreak', 'mention', 'image', 'emoji'), attrs: fc.option(attrs, { nil: undefined }), marks },
  { requiredKeys: ['type'] },
);

const node: fc.Memo<RichNode> = fc.memo((depth) =>
  depth <= 1
    ? fc.record({ type: typeName, attrs: fc.option(attrs, { nil: undefined }), content: fc.option(fc.array(fc.oneof(textNode, inlineAtom), { maxLength: 5 }), { nil: undefined }) }, { requiredKeys: ['type'] })
    : fc.record(
        {
          type: typeName,
          attrs: fc.option(attrs, { nil: undefined }),
          marks,
          content: fc.option(fc.array(fc.oneof({ weight: 3, arbitrary: node(depth - 1) }, textNode, inlineAtom), { maxLength: 4 }), { nil: undefined }),
        },
        { requiredKeys: ['type'] },
      ),
);

const block = node(3).map((n) => ({ ...n, attrs: { ...n.attrs } }));

/** Documents in normal form with unique top-level ids (some blocks named). */
export const richDocument: fc.Arbitrary<DocumentContent> = fc
  .array(fc.tuple(block, fc.option(richText, { nil: undefined })), { maxLength: 6 })
  .map((blocks) => {
    const content = blocks.map(([b, name], i) => {
      const a: JsonObject = { ...b.attrs, id: `b${i}` };
      if (name !== undefined) a.name = name;
      else delete a.name;
      return { ...b, attrs: a };
    });
    return normalizeDocument({ type: 'doc', content });
  });

/** A CEL-ish expression with the characters markdown-ir escapes. */
const expression = fc.oneof(fc.constantFrom('x > 1', 'inputs.n == 2', '"a:::b" in [item]', 'size(xs) > 0 && xs[0].k == "{{v}}"', '\\[x]'), richText);
const leafBlock = fc.record({ type: fc.constantFrom('toolBlock', 'llmBlock', 'codeBlock'), attrs: fc.record({ name: fc.stringMatching(/^[a-z]{1,6}$/), when: fc.option(expression, { nil: undefined }) }, { requiredKeys: ['name'] }), content: fc.option(fc.array(textNode, { minLength: 1, maxLength: 2 }), { nil: undefined }) }, { requiredKeys: ['type', 'attrs'] });
/** An http block: method, a URL template, header templates and a JSON body with the characters markdown-ir escapes. */
const httpBlock = fc.record(
  {
    type: fc.constant('httpBlock'),
    attrs: fc.record(
      {
        name: fc.stringMatching(/^[a-z]{1,6}$/),
        method: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'),
        url: fc.constantFrom('{{ toolUrl }}/echo', 'https://example.com/a?q={{ q }}&r=:::', 'http://h/{{x.y.0}}'),
        headers: fc.option(fc.dictionary(fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,8}$/), fc.oneof(richText, expression), { maxKeys: 3 }), { nil: undefined }),
        body: fc.option(jsonData, { nil: undefined }),
        responseType: fc.option(fc.constantFrom('auto', 'json', 'text'), { nil: undefined }),
        when: fc.option(expression, { nil: undefined }),
      },
      { requiredKeys: ['name', 'method', 'url'] },
    ),
  },
  { requiredKeys: ['type', 'attrs'] },
);
const anyLeaf = fc.oneof(leafBlock, httpBlock) as fc.Arbitrary<RichNode>;
const controlBlock: fc.Memo<RichNode> = fc.memo((depth) => {
  const children = fc.array(depth <= 1 ? anyLeaf : fc.oneof(anyLeaf, controlBlock(depth - 1)), { minLength: 1, maxLength: 3 }) as fc.Arbitrary<RichNode[]>;
  const arms = (type: string) => fc.array(fc.record({ type: fc.constant(type), attrs: fc.record({ name: fc.stringMatching(/^[a-z]{1,6}$/), when: fc.option(expression, { nil: undefined }) }, { requiredKeys: ['name'] }), content: children }), { minLength: 1, maxLength: 3 });
  return fc.oneof(
    fc.record({ type: fc.constant('loopBlock'), attrs: fc.record({ name: fc.constant('l'), items: expression, concurrency: fc.integer({ min: 1, max: 16 }) }), content: children }),
    fc.record({ type: fc.constant('repeatBlock'), attrs: fc.record({ name: fc.constant('r'), until: expression, maxIterations: fc.integer({ min: 1, max: 1000 }) }), content: children }),
    fc.record({ type: fc.constant('branchBlock'), attrs: fc.record({ name: fc.constant('b') }), content: arms('branchCase') }),
    fc.record({ type: fc.constant('parallelBlock'), attrs: fc.record({ name: fc.constant('p') }), content: arms('parallelBranch') }),
  ) as fc.Arbitrary<RichNode>;
});

/** Workflow documents with control-flow containers (docs/runs.md, "Control flow"), nested, in normal form. */
export const controlFlowDocument: fc.Arbitrary<DocumentContent> = fc
  .array(controlBlock(3), { minLength: 1, maxLength: 3 })
  .map((blocks) => normalizeDocument({ type: 'doc', content: blocks.map((b, i) => ({ ...b, attrs: { ...b.attrs, id: `c${i}` } })) }));
