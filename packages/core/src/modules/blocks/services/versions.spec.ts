import { describe, expect, it } from 'vitest';
import { compareVersions, highestVersion, nextVersion, VERSION_PATTERN } from './versions.js';

describe('block versions', () => {
  it('compares number by number', () => {
    expect(compareVersions('1.10', '1.9')).toBeGreaterThan(0);
    expect(compareVersions('2', '10')).toBeLessThan(0);
    expect(compareVersions('1.0', '1')).toBeGreaterThan(0);
    expect(compareVersions('3.1.4', '3.1.4')).toBe(0);
  });
  it('gives the next version after the highest', () => {
    expect(nextVersion([])).toBe('1');
    expect(nextVersion(['1', '2'])).toBe('3');
    expect(nextVersion(['1', '1.9', '1.10'])).toBe('1.11');
    expect(nextVersion(['2.0.9', '1'])).toBe('2.0.10');
    expect(highestVersion(['9', '10', '1.5'])).toBe('10');
  });
  it('accepts only dotted numbers', () => {
    for (const ok of ['1', '1.2', '1.2.3', '0']) expect(VERSION_PATTERN.test(ok)).toBe(true);
    for (const bad of ['', 'v1', '1.', '1.2.3.4', '1..2', 'latest', '1-beta']) expect(VERSION_PATTERN.test(bad)).toBe(false);
  });
});
