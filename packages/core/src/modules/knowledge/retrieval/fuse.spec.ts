import { describe, expect, it } from 'vitest';
import { fuseRankings } from './fuse.js';

describe('fuseRankings', () => {
  it('ranks a chunk both methods found above chunks only one found', () => {
    const fused = fuseRankings({ keyword: ['a', 'b', 'c'], vector: ['d', 'c', 'a'] }, 60);
    expect(fused.map((hit) => hit.id)).toEqual(['a', 'c', 'd', 'b']);
    expect(fused[0]).toMatchObject({ keywordRank: 1, vectorRank: 3 });
    expect(fused.every((hit) => hit.score > 0 && hit.score <= 1)).toBe(true);
  });

  it('scores 1 for the first of a single ranking', () => {
    const [x, y] = fuseRankings({ keyword: null, vector: ['x', 'y'] }, 60);
    expect(x!.score).toBeCloseTo(1, 12);
    expect(y!.score).toBeCloseTo(61 / 62, 12);
  });
});
