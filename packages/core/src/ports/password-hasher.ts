import { hash, verify } from '@node-rs/argon2';
import type { ServiceIdentifier } from 'inversify';

/** Password hashing. The default is Argon2id with OWASP's recommended cost (19 MiB, t=2, p=1). */
export interface PasswordHasher {
  hash(password: string): Promise<string>;
  verify(digest: string, password: string): Promise<boolean>;
}

export const passwordHasherServiceIdentifier: ServiceIdentifier<PasswordHasher> = Symbol.for('@trellis/core/PasswordHasher');

export interface Argon2Options {
  memoryCost?: number;
  timeCost?: number;
  parallelism?: number;
}

export class Argon2idPasswordHasher implements PasswordHasher {
  private readonly options: Required<Argon2Options>;

  constructor(options: Argon2Options = {}) {
    this.options = { memoryCost: 19_456, timeCost: 2, parallelism: 1, ...options };
  }

  hash(password: string): Promise<string> {
    // algorithm 2 is Argon2id in @node-rs/argon2's const enum.
    return hash(password, { ...this.options, algorithm: 2 });
  }

  async verify(digest: string, password: string): Promise<boolean> {
    try {
      return await verify(digest, password);
    } catch {
      return false;
    }
  }
}
