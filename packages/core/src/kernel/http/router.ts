/**
 * Path matching for the route table. Static paths resolve through one map lookup; paths with
 * `:param` segments go through a segment trie where static segments win over parameters. Each
 * route names its own parameters, so `/documents/:documentId/edit` and
 * `/documents/:projectId/duplicate` can share a position under different names.
 */
export interface RouteMatch<T> {
  value: T;
  params: Record<string, string>;
}

interface Leaf<T> {
  value: T;
  /** Parameter names of this route, in path order. */
  names: string[];
}

interface Node<T> {
  statics: Map<string, Node<T>>;
  param?: Node<T>;
  leaves: Map<string, Leaf<T>>;
}

const newNode = <T>(): Node<T> => ({ statics: new Map(), leaves: new Map() });

export class Router<T> {
  private readonly exact = new Map<string, Map<string, T>>();
  private readonly root: Node<T> = newNode();

  add(method: string, path: string, value: T): void {
    const segments = splitPath(path);
    const names = segments.filter((segment) => segment.startsWith(':')).map((segment) => segment.slice(1));
    if (names.length === 0) {
      const key = normalise(path);
      const byMethod = this.exact.get(key) ?? new Map<string, T>();
      if (byMethod.has(method)) throw new Error(`Duplicate route ${method} ${path}`);
      byMethod.set(method, value);
      this.exact.set(key, byMethod);
      return;
    }
    if (new Set(names).size !== names.length) throw new Error(`Route ${method} ${path} repeats a parameter name`);
    let node = this.root;
    for (const segment of segments) {
      if (segment.startsWith(':')) node = node.param ??= newNode();
      else {
        let next = node.statics.get(segment);
        if (!next) node.statics.set(segment, (next = newNode()));
        node = next;
      }
    }
    if (node.leaves.has(method)) throw new Error(`Duplicate route ${method} ${path}`);
    node.leaves.set(method, { value, names });
  }

  /** The route for this method and path, or the methods the path does answer to (for 405). */
  find(method: string, path: string): RouteMatch<T> | { allowed: string[] } | null {
    const key = normalise(path);
    const byMethod = this.exact.get(key);
    if (byMethod) {
      const value = byMethod.get(method);
      if (value !== undefined) return { value, params: {} };
    }
    const values: string[] = [];
    const node = this.walk(this.root, splitPath(key), 0, values);
    if (node) {
      const leaf = node.leaves.get(method);
      if (leaf) {
        const params: Record<string, string> = {};
        leaf.names.forEach((name, i) => (params[name] = values[i]!));
        return { value: leaf.value, params };
      }
    }
    const allowed = new Set<string>([...(byMethod?.keys() ?? []), ...(node?.leaves.keys() ?? [])]);
    return allowed.size > 0 ? { allowed: [...allowed] } : null;
  }

  private walk(node: Node<T>, segments: string[], index: number, values: string[]): Node<T> | null {
    if (index === segments.length) return node.leaves.size > 0 ? node : null;
    const segment = segments[index]!;
    const next = node.statics.get(segment);
    if (next) {
      const found = this.walk(next, segments, index + 1, values);
      if (found) return found;
    }
    if (node.param && segment !== '') {
      let decoded: string;
      try {
        decoded = decodeURIComponent(segment);
      } catch {
        return null;
      }
      values.push(decoded);
      const found = this.walk(node.param, segments, index + 1, values);
      if (found) return found;
      values.pop();
    }
    return null;
  }
}

function normalise(path: string): string {
  return path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
}

function splitPath(path: string): string[] {
  return normalise(path).split('/').slice(1);
}
