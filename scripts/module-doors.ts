/**
 * Module doors: every import from one module of packages/core/src/modules into another goes
 * through the other module's `index.ts` (its door). This codemod makes it so:
 *
 *   pnpm doors            rewrite the imports and add the missing exports to the doors
 *   pnpm doors --check    change nothing; exit 1 when something would change
 *
 * For each `import … from` / `export … from` in `modules/<a>/**` that reaches into
 * `modules/<b>/<anything but index.ts>`:
 *   - the specifier becomes the relative path to `modules/<b>/index.js` (imports of one file
 *     from the same door are merged into one declaration);
 *   - every name it takes is exported by `modules/<b>/index.ts`, under the same name, from the
 *     file that declares it (`export type { … }` when the name has no value), unless the door
 *     already exports that very symbol;
 *   - a bare `import '…/hooks.js'` (kept for its declaration merging) becomes
 *     `import type {} from '…/index.js'`, and the door gets `export type {} from './hooks.js'`.
 *
 * It also reports modules that load each other (a cycle through doors; scripts/module-graph.ts).
 *
 * It is idempotent (a second run changes nothing) and reads the tree as it is, with the
 * TypeScript compiler: names are resolved by the checker, not by text. What it cannot do safely it
 * leaves alone and prints (a door exporting another symbol under the same name, a namespace or
 * default import, a name the target does not export); `eslint .` then points at those lines.
 * `modules/index.ts` (the list of built-in modules) is not a module and is left as it is.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { moduleCycles, moduleEdges } from './module-graph.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const coreDir = join(repo, 'packages/core');
const modulesDir = join(coreDir, 'src/modules');
const check = process.argv.includes('--check');

/** The module a file belongs to (`modules/<name>/…`), or null when it is outside every module. */
function moduleOf(file: string): string | null {
  const rel = relative(modulesDir, file);
  if (rel.startsWith('..') || !rel.includes(sep)) return null;
  return rel.split(sep)[0]!;
}
const doorOf = (module: string) => join(modulesDir, module, 'index.ts');
const toPosix = (p: string) => p.split(sep).join('/');
/** A relative import specifier from `fromFile` to the TypeScript file `toFile` (as `.js`). */
function specifier(fromFile: string, toFile: string): string {
  let rel = toPosix(relative(dirname(fromFile), toFile)).replace(/\.ts$/, '.js');
  if (!rel.startsWith('.')) rel = `./${rel}`;
  return rel;
}
/** The file a relative specifier names (`.js` → `.ts`, a folder → its index.ts), or null. */
function resolveSpecifier(fromFile: string, spec: string): string | null {
  if (!spec.startsWith('.')) return null;
  const base = resolve(dirname(fromFile), spec);
  for (const candidate of [base.replace(/\.js$/, '.ts'), base.replace(/\.js$/, '.tsx'), `${base}.ts`, join(base, 'index.ts')]) {
    if (existsSync(candidate)) return candidate;
  }
  return null;
}

const configPath = join(coreDir, 'tsconfig.json');
const parsed = ts.getParsedCommandLineOfConfigFile(configPath, {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: (d) => { throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n')); } });
if (!parsed) throw new Error(`cannot read ${configPath}`);
const program = ts.createProgram({ rootNames: parsed.fileNames, options: { ...parsed.options, noEmit: true } });
const checker = program.getTypeChecker();

const resolveAlias = (symbol: ts.Symbol) => (symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol);
function exportsOf(file: string): Map<string, ts.Symbol> {
  const source = program.getSourceFile(file);
  const moduleSymbol = source && checker.getSymbolAtLocation(source);
  const out = new Map<string, ts.Symbol>();
  if (moduleSymbol) for (const s of checker.getExportsOfModule(moduleSymbol)) out.set(s.name, resolveAlias(s));
  return out;
}

/** What each door must gain: per door, per target file, the names (and whether each is a type). */
interface DoorPlan { exported: Map<string, ts.Symbol>; add: Map<string, Map<string, boolean>>; sideEffects: Set<string> }
const doors = new Map<string, DoorPlan>();
function door(module: string): DoorPlan {
  let plan = doors.get(module);
  if (!plan) {
    const file = doorOf(module);
    plan = { exported: existsSync(file) ? exportsOf(file) : new Map(), add: new Map(), sideEffects: new Set() };
    doors.set(module, plan);
  }
  return plan;
}

const problems: string[] = [];
const edits = new Map<string, { start: number; end: number; text: string }[]>();
const edit = (file: string, start: number, end: number, text: string) => {
  const list = edits.get(file) ?? [];
  list.push({ start, end, text });
  edits.set(file, list);
};
let rewritten = 0;

const sources = program.getSourceFiles().filter((s) => !s.isDeclarationFile && moduleOf(s.fileName) !== null).sort((x, y) => x.fileName.localeCompare(y.fileName));
for (const source of sources) {
  const file = source.fileName;
  const own = moduleOf(file)!;
  const where = (node: ts.Node) => `${toPosix(relative(repo, file))}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`;
  /** Import declarations that end at a door, by door file: merged afterwards. */
  const toDoor = new Map<string, { decl: ts.ImportDeclaration; elements: { text: string; type: boolean }[]; changed: boolean }[]>();

  for (const statement of source.statements) {
    if (!(ts.isImportDeclaration(statement) || ts.isExportDeclaration(statement)) || !statement.moduleSpecifier || !ts.isStringLiteral(statement.moduleSpecifier)) continue;
    const target = resolveSpecifier(file, statement.moduleSpecifier.text);
    const other = target && moduleOf(target);
    if (!target || !other || other === own) continue;
    const targetDoor = doorOf(other);
    const doorSpecifier = specifier(file, targetDoor);
    const isDoor = target === targetDoor;

    if (ts.isImportDeclaration(statement) && !statement.importClause) {
      // A bare import, kept for a declaration merging (hooks): through the door, types only.
      if (!isDoor) {
        door(other).sideEffects.add(target);
        edit(file, statement.getStart(source), statement.getEnd(), `import type {} from '${doorSpecifier}';`);
        rewritten++;
      }
      continue;
    }
    const clause = ts.isImportDeclaration(statement) ? statement.importClause! : undefined;
    const named = clause ? clause.namedBindings : (statement as ts.ExportDeclaration).exportClause;
    if ((clause && clause.name) || !named || !(ts.isNamedImports(named) || ts.isNamedExports(named))) {
      if (!isDoor) problems.push(`${where(statement)}: only named imports can go through a door; change it by hand: ${statement.getText(source)}`);
      continue;
    }
    const declTypeOnly = clause ? clause.isTypeOnly : (statement as ts.ExportDeclaration).isTypeOnly;
    const elements = (named.elements as ts.NodeArray<ts.ImportSpecifier | ts.ExportSpecifier>).map((el) => ({
      name: (el.propertyName ?? el.name).text,
      text: el.getText(source).replace(/^type\s+/, ''),
      type: declTypeOnly || el.isTypeOnly,
    }));

    if (!isDoor) {
      const targetExports = exportsOf(target);
      const plan = door(other);
      const additions: [string, ts.Symbol][] = [];
      let ok = true;
      for (const el of elements) {
        const symbol = targetExports.get(el.name);
        if (!symbol) {
          problems.push(`${where(statement)}: ${toPosix(relative(repo, target))} does not export ${el.name}; left as it is`);
          ok = false;
          continue;
        }
        const existing = plan.exported.get(el.name);
        if (existing && existing !== symbol) {
          problems.push(`${where(statement)}: modules/${other}/index.ts already exports another ${el.name}; left as it is (rename one of them)`);
          ok = false;
          continue;
        }
        if (!existing) additions.push([el.name, symbol]);
      }
      if (!ok) continue;
      for (const [name, symbol] of additions) {
        plan.exported.set(name, symbol);
        const names = plan.add.get(target) ?? new Map<string, boolean>();
        names.set(name, !(symbol.flags & ts.SymbolFlags.Value));
        plan.add.set(target, names);
      }
      rewritten++;
    }

    if (ts.isExportDeclaration(statement)) {
      if (!isDoor) edit(file, statement.moduleSpecifier.getStart(source), statement.moduleSpecifier.getEnd(), `'${doorSpecifier}'`);
      continue;
    }
    const group = toDoor.get(targetDoor) ?? [];
    group.push({ decl: statement, elements, changed: !isDoor });
    toDoor.set(targetDoor, group);
  }

  // One import declaration per door: the first one takes the names of the others.
  for (const [targetDoor, group] of toDoor) {
    if (group.length === 1 && !group[0]!.changed) continue;
    const all = group.flatMap((g) => g.elements);
    // One entry per name; a name wanted as a value by any of them is imported as a value.
    const byText = new Map<string, { text: string; type: boolean }>();
    for (const e of all) {
      const known = byText.get(e.text);
      byText.set(e.text, { text: e.text, type: known ? known.type && e.type : e.type });
    }
    const unique = [...byText.values()];
    const allTypes = unique.every((e) => e.type);
    const list = unique.map((e) => (allTypes || !e.type ? e.text : `type ${e.text}`)).join(', ');
    const [first, ...rest] = group;
    edit(file, first!.decl.getStart(source), first!.decl.getEnd(), `import ${allTypes ? 'type ' : ''}{ ${list} } from '${specifier(file, targetDoor)}';`);
    for (const g of rest) {
      // Remove the declaration and its line break.
      let end = g.decl.getEnd();
      if (source.text[end] === '\n') end++;
      edit(file, g.decl.getFullStart() + (source.text.slice(g.decl.getFullStart(), g.decl.getStart(source)).lastIndexOf('\n') + 1), end, '');
    }
  }
}

// packages/core/src/index.ts re-exports every door with `export *`: a name two doors export for
// different symbols is an error there (TS2308), and one it also exports by name from elsewhere is
// hidden by that export. Both are reported (the first as a problem, the second as a note).
const notes: string[] = [];
{
  const coreExports = exportsOf(join(coreDir, 'src/index.ts'));
  const modules = [...new Set(sources.map((s) => moduleOf(s.fileName)!))].filter((m) => existsSync(doorOf(m)));
  const owners = new Map<string, { module: string; symbol: ts.Symbol }[]>();
  for (const module of modules) {
    for (const [name, symbol] of door(module).exported) {
      const list = owners.get(name) ?? [];
      if (!list.some((o) => o.symbol === symbol)) list.push({ module, symbol });
      owners.set(name, list);
    }
  }
  for (const [module, plan] of doors) {
    for (const names of plan.add.values()) {
      for (const name of names.keys()) {
        const others = (owners.get(name) ?? []).filter((o) => o.module !== module);
        const symbol = plan.exported.get(name);
        const public_ = coreExports.get(name);
        if (public_ && symbol && public_ !== symbol && !others.length) notes.push(`modules/${module}/index.ts now exports ${name}, which @trellis/core exports from elsewhere (its own wins there); consider renaming one`);
        if (others.length) problems.push(`modules/${module}/index.ts would export ${name}, which modules/${others.map((o) => o.module).join(', modules/')}/index.ts exports too (another symbol): rename one; @trellis/core re-exports every door`);
      }
    }
  }
}

// The doors: new names go into an existing `export … from` of the same file when there is one.
for (const [module, plan] of [...doors].sort(([a], [b]) => a.localeCompare(b))) {
  if (!plan.add.size && !plan.sideEffects.size) continue;
  const file = doorOf(module);
  const source = program.getSourceFile(file);
  const appended: string[] = [];
  for (const [target, names] of [...plan.add].sort(([a], [b]) => a.localeCompare(b))) {
    const spec = specifier(file, target);
    const values = [...names].filter(([, type]) => !type).map(([n]) => n).sort();
    const types = [...names].filter(([, type]) => type).map(([n]) => n).sort();
    const existing = source?.statements.find(
      (s): s is ts.ExportDeclaration =>
        ts.isExportDeclaration(s) && !s.isTypeOnly && !!s.exportClause && ts.isNamedExports(s.exportClause) && !!s.moduleSpecifier && ts.isStringLiteral(s.moduleSpecifier) && resolveSpecifier(file, s.moduleSpecifier.text) === target,
    );
    if (existing) {
      const clause = existing.exportClause as ts.NamedExports;
      const extra = [...values, ...types.map((t) => `type ${t}`)].join(', ');
      const last = clause.elements[clause.elements.length - 1];
      if (last) edit(file, last.getEnd(), last.getEnd(), `, ${extra}`);
      else edit(file, clause.getStart(source), clause.getEnd(), `{ ${extra} }`);
      continue;
    }
    if (values.length) appended.push(`export { ${values.join(', ')} } from '${spec}';`);
    if (types.length) appended.push(`export type { ${types.join(', ')} } from '${spec}';`);
  }
  for (const target of [...plan.sideEffects].sort()) {
    const spec = specifier(file, target);
    const reached = source?.statements.some((s) => (ts.isExportDeclaration(s) || ts.isImportDeclaration(s)) && s.moduleSpecifier && ts.isStringLiteral(s.moduleSpecifier) && resolveSpecifier(file, s.moduleSpecifier.text) === target);
    if (!reached && !appended.some((line) => line.endsWith(`'${spec}';`))) appended.push(`export type {} from '${spec}'; // its declaration merging`);
  }
  if (!appended.length) continue;
  const header = '// Used by other modules (added by scripts/module-doors.ts; keep or sort by hand as you like)';
  if (!source) {
    edit(file, 0, 0, `${header}\n${appended.join('\n')}\n`);
    continue;
  }
  const text = source.text;
  const hasHeader = text.includes(header);
  const end = text.length;
  edit(file, end, end, `${text.endsWith('\n') ? '' : '\n'}${hasHeader ? '' : `${header}\n`}${appended.join('\n')}\n`);
}

const changedFiles = [...edits.keys()].sort();
for (const file of changedFiles) {
  const list = edits.get(file)!.sort((x, y) => y.start - x.start || y.end - x.end);
  let text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  for (const e of list) text = text.slice(0, e.start) + e.text + text.slice(e.end);
  if (!check) writeFileSync(file, text);
}

// Doors load whole modules: modules that load each other would meet half-loaded (see module-graph.ts).
const edges = moduleEdges(modulesDir);
for (const cycle of moduleCycles(edges)) {
  const inside = edges.filter((e) => cycle.includes(e.from) && cycle.includes(e.to)).map((e) => `${e.from} → ${e.to} (${e.via})`);
  problems.push(`modules ${cycle.join(', ')} load each other; break the cycle (docs/modules.md, "Doors"):\n    ${inside.join('\n    ')}`);
}

for (const n of notes) console.error(`module-doors: note: ${n}`);
for (const p of problems) console.error(`module-doors: ${p}`);
console.log(`module-doors: ${rewritten} cross-module import(s) ${check ? 'to rewrite' : 'rewritten'}, ${changedFiles.length} file(s) ${check ? 'to change' : 'changed'}${problems.length ? `, ${problems.length} left for a hand` : ''}.`);
if (check && changedFiles.length) process.exit(1);
if (problems.length) process.exitCode = 1;
