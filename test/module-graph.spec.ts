import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { moduleCycles, moduleEdges } from '../scripts/module-graph.js';

const modulesDir = fileURLToPath(new URL('../packages/core/src/modules', import.meta.url));

// A module's door (index.ts) loads the whole module: modules that load each other would meet
// half-loaded. docs/modules.md, "Doors".
describe('the modules of @trellis/core', () => {
  it('do not load each other in a cycle', () => {
    const edges = moduleEdges(modulesDir);
    expect(edges.length).toBeGreaterThan(50);
    expect(edges.some((e) => e.from === 'runs' && e.to === 'blocks')).toBe(true);
    const cycles = moduleCycles(edges);
    const explain = cycles.map((c) => edges.filter((e) => c.includes(e.from) && c.includes(e.to)).map((e) => `${e.from} → ${e.to}: ${e.via}`).join('\n')).join('\n\n');
    expect(cycles, explain).toEqual([]);
  });

  it('finds a cycle when there is one', () => {
    const edges = [
      { from: 'a', to: 'b', via: '' },
      { from: 'b', to: 'c', via: '' },
      { from: 'c', to: 'a', via: '' },
      { from: 'c', to: 'd', via: '' },
    ];
    expect(moduleCycles(edges)).toEqual([['a', 'b', 'c']]);
    expect(moduleCycles(edges.slice(0, 2))).toEqual([]);
  });
});
