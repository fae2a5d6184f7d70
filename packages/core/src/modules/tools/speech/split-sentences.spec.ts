import { describe, expect, it } from 'vitest';
import { splitSentences } from './split-sentences.js';

describe('splitSentences', () => {
  it('splits at sentence ends and keeps their punctuation', () => {
    expect(splitSentences('你好。今天天气很好！去公园吗？好的; ok. Fine', 100)).toEqual(['你好。', '今天天气很好！', '去公园吗？', '好的;', 'ok.', 'Fine']);
  });

  it('splits a long sentence at clause marks, then hard, never beyond the limit', () => {
    const text = '红的、黄的、紫的，非常漂亮，我们在湖边看日落。' + '长'.repeat(25) + '。';
    const pieces = splitSentences(text, 10);
    expect(pieces.every((piece) => piece.length <= 10)).toBe(true);
    expect(pieces.join('')).toBe(text);
    expect(pieces[0]).toBe('红的、黄的、紫的，');
  });

  it('drops pieces without letters or digits', () => {
    expect(splitSentences('。。。\n\n  ！', 50)).toEqual([]);
    expect(splitSentences('第一行\n第二行', 50)).toEqual(['第一行', '第二行']);
  });
});
