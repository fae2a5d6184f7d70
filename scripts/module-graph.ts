/**
 * Which module of packages/core/src/modules loads which at run time, and the cycles among them.
 *
 * A door (`modules/<name>/index.ts`) loads its whole module, so a cycle between modules is a
 * cycle between their doors: one of them would run before the other's classes exist (a
 * `ReferenceError` on an entity class or an `@inject(...)` argument, or `undefined` in the
 * bundle). Type-only imports are erased and do not count; spec files are entry points, never
 * loaded by a module, and do not count either. Syntax only (no type checker): fast enough for a
 * unit test (test/module-graph.spec.ts) and used by scripts/module-doors.ts.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import ts from 'typescript';

export interface ModuleEdge {
  from: string;
  to: string;
  /** One import that makes the edge, as `file → specifier`. */
  via: string;
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) out.push(path);
  }
  return out;
}

/** The run-time imports from one module into another (type-only and spec-file imports left out). */
export function moduleEdges(modulesDir: string): ModuleEdge[] {
  const edges = new Map<string, ModuleEdge>();
  const moduleOf = (file: string) => {
    const rel = relative(modulesDir, file);
    return rel.startsWith('..') || !rel.includes(sep) ? null : rel.split(sep)[0]!;
  };
  for (const file of filesUnder(modulesDir)) {
    const own = moduleOf(file);
    if (!own || file.endsWith('.spec.ts')) continue;
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, false);
    for (const statement of source.statements) {
      if (!(ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) || !statement.moduleSpecifier || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
      const spec = statement.moduleSpecifier.text;
      if (!spec.startsWith('.')) continue;
      if (ts.isImportDeclaration(statement)) {
        const clause = statement.importClause;
        if (clause?.isTypeOnly) continue;
        // `import { type A, type B }` is erased too (verbatimModuleSyntax keeps `import {}` only when a value is named).
        const named = clause?.namedBindings;
        if (clause && !clause.name && named && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly)) continue;
      } else {
        if (statement.isTypeOnly) continue;
        const named = statement.exportClause;
        if (named && ts.isNamedExports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly)) continue;
      }
      const base = resolve(dirname(file), spec);
      const target = [base.replace(/\.js$/, '.ts'), `${base}.ts`, join(base, 'index.ts')].find((candidate) => existsSync(candidate));
      const other = target && moduleOf(target);
      if (!other || other === own) continue;
      const key = `${own}>${other}`;
      if (!edges.has(key)) edges.set(key, { from: own, to: other, via: `${relative(modulesDir, file).split(sep).join('/')} → ${spec}` });
    }
  }
  return [...edges.values()].sort((a, b) => a.from.localeCompare(b.from) || a.to.localeCompare(b.to));
}

/** The groups of modules that load each other (strongly connected components of two or more), each sorted. */
export function moduleCycles(edges: readonly ModuleEdge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const e of edges) next.set(e.from, [...(next.get(e.from) ?? []), e.to]);
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  let counter = 0;
  const visit = (v: string) => {
    index.set(v, counter);
    low.set(v, counter++);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  return groups;
}
