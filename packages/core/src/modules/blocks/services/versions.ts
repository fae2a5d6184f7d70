/**
 * Block version strings: one to three dot-separated numbers (`1`, `2`, `1.4`, `2.0.1`). They are
 * compared number by number (`1.10` is after `1.9`); the next version increments the last number
 * of the highest one (`1` → `2`, `1.4` → `1.5`), and the first one is `1`.
 */
export const VERSION_PATTERN = /^\d{1,9}(\.\d{1,9}){0,2}$/;

export function compareVersions(a: string, b: string): number {
  const x = a.split('.').map(Number);
  const y = b.split('.').map(Number);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

export function highestVersion(versions: readonly string[]): string | null {
  return versions.reduce<string | null>((best, v) => (best === null || compareVersions(v, best) > 0 ? v : best), null);
}

export function nextVersion(versions: readonly string[]): string {
  const highest = highestVersion(versions);
  if (highest === null) return '1';
  const parts = highest.split('.').map(Number);
  parts[parts.length - 1]! += 1;
  return parts.join('.');
}
