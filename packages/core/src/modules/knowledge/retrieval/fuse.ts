/** One chunk's place in each ranking that found it, and its fused score. */
export interface FusedHit {
  id: string;
  score: number;
  keywordRank: number | null;
  vectorRank: number | null;
}

/**
 * Reciprocal rank fusion: a chunk scores the sum of `1 / (k + rank)` (rank from 1) over the rankings
 * that found it, divided by the most a chunk could score (first in every ranking), so scores are in
 * (0, 1]. Ties keep the keyword ranking's order, then the ids'.
 */
export function fuseRankings(rankings: { keyword: readonly string[] | null; vector: readonly string[] | null }, k: number): FusedHit[] {
  const hits = new Map<string, FusedHit>();
  const lists = [rankings.keyword, rankings.vector].filter((list): list is readonly string[] => list !== null);
  const best = lists.length / (k + 1);
  const add = (list: readonly string[] | null, field: 'keywordRank' | 'vectorRank') => {
    list?.forEach((id, index) => {
      const hit = hits.get(id) ?? { id, score: 0, keywordRank: null, vectorRank: null };
      hit[field] = index + 1;
      hit.score += 1 / (k + index + 1) / best;
      hits.set(id, hit);
    });
  };
  add(rankings.keyword, 'keywordRank');
  add(rankings.vector, 'vectorRank');
  return [...hits.values()].sort((a, b) => b.score - a.score || (a.keywordRank ?? Infinity) - (b.keywordRank ?? Infinity) || (a.id < b.id ? -1 : 1));
}
