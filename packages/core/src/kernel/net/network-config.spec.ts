import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config/schema.js';
import { validateConfig } from '../config/config.js';
import { allowPrivateNetworksOf } from './network-guard.js';

describe('network.allowPrivateNetworks', () => {
  it('is false by default, and takes true or a list of ports, addresses, ranges and host names', () => {
    expect(validateConfig({}).network.allowPrivateNetworks).toBe(false);
    expect(validateConfig({ network: { allowPrivateNetworks: true } }).network.allowPrivateNetworks).toBe(true);
    const list = ['127.0.0.1', '10.0.0.0/8', '::1', '[fd00::]/8', '11434', 'ollama.internal', '*.svc.cluster.local'];
    expect(validateConfig({ network: { allowPrivateNetworks: list } }).network.allowPrivateNetworks).toEqual(list);
  });

  it('reads an environment value: a boolean, or a comma-separated list', () => {
    expect(validateConfig({ network: { allowPrivateNetworks: 'true' } }).network.allowPrivateNetworks).toBe(true);
    expect(validateConfig({ network: { allowPrivateNetworks: '127.0.0.1, 8080' } }).network.allowPrivateNetworks).toEqual(['127.0.0.1', '8080']);
  });

  it('refuses an entry that is no port, address, range or host name', () => {
    expect(() => validateConfig({ network: { allowPrivateNetworks: ['http://x/'] } })).toThrow(ConfigError);
    expect(() => validateConfig({ network: { allowPrivateNetworks: 3 } })).toThrow(/network\.allowPrivateNetworks/);
  });

  it('folds in the deprecated ai.tools.allowPrivateNetworks', () => {
    expect(allowPrivateNetworksOf({ network: { allowPrivateNetworks: false }, ai: { tools: { allowPrivateNetworks: true } } })).toEqual({ allow: true, deprecated: true });
    expect(allowPrivateNetworksOf({ network: { allowPrivateNetworks: ['8080'] }, ai: { tools: { allowPrivateNetworks: false } } })).toEqual({ allow: ['8080'], deprecated: false });
    expect(allowPrivateNetworksOf({})).toEqual({ allow: false, deprecated: false });
  });
});
