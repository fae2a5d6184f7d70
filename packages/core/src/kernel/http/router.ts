/**
 * Path matching for the route table. Static paths resolve through one map lookup; paths with
 * `:param` segments go through a segment trie where static segments win over parameters.
 */
export interface RouteMatch<T> {
  value: T;
  params: Record<string, string>;
}

interface Node<T> {
  statics: Map<string, Node<T>>;
  param?: { name: string; node: Node<T> };
  values: Map<string, T>;
}

const newNode = <T>(): Node<T> => ({ statics: new Map(), values: new Map() });

export class Router<T> {
  private readonly exact = new Map<string, Map<string, T>>();
  private readonly root: Node<T> = newNode();

  add(method: string, path: string, value: T): void {
    const segments = splitPath(path);
    if (!segments.some((segment) => segment.startsWith(':'))) {
      const key = normalise(path);
      const byMethod = this.exact.get(key) ?? new Map<string, T>();
      if (byMethod.has(method)) throw new Error(`Duplicate route ${method} ${path}`);
      byMethod.set(method, value);
      this.exact.set(key, byMethod);
      return;
    }
    let node = this.root;
    for (const segment of segments) {
      if (segment.startsWith(':')) {
        const name = segment.slice(1);
        if (!node.param) node.param = { name, node: newNode() };
        else if (node.param.name !== name) {
          throw new Error(`Route ${method} ${path}: parameter :${name} conflicts with :${node.param.name} at the same position`);
        }
        node = node.param.node;
      } else {
        let next = node.statics.get(segment);
        if (!next) node.statics.set(segment, (next = newNode()));
        node = next;
      }
    }
    if (node.values.has(method)) throw new Error(`Duplicate route ${method} ${path}`);
    node.values.set(method, value);
  }

  /** The route for this method and path, or the methods the path does answer to (for 405). */
  find(method: string, path: string): RouteMatch<T> | { allowed: string[] } | null {
    const key = normalise(path);
    const byMethod = this.exact.get(key);
    if (byMethod) {
      const value = byMethod.get(method);
      if (value !== undefined) return { value, params: {} };
    }
    const params: Record<string, string> = {};
    const node = this.walk(this.root, splitPath(key), 0, params);
    if (node) {
      const value = node.values.get(method);
      if (value !== undefined) return { value, params };
    }
    const allowed = new Set<string>([...(byMethod?.keys() ?? []), ...(node?.values.keys() ?? [])]);
    return allowed.size > 0 ? { allowed: [...allowed] } : null;
  }

  private walk(node: Node<T>, segments: string[], index: number, params: Record<string, string>): Node<T> | null {
    if (index === segments.length) return node.values.size > 0 ? node : null;
    const segment = segments[index]!;
    const next = node.statics.get(segment);
    if (next) {
      const found = this.walk(next, segments, index + 1, params);
      if (found) return found;
    }
    if (node.param && segment !== '') {
      let decoded: string;
      try {
        decoded = decodeURIComponent(segment);
      } catch {
        return null;
      }
      const found = this.walk(node.param.node, segments, index + 1, params);
      if (found) {
        params[node.param.name] = decoded;
        return found;
      }
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
