import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import { inject, injectable } from 'inversify';
import type { Authenticator } from '../../../kernel/auth/authenticator.js';
import type { TrellisConfig } from '../../../kernel/config/config.js';
import { TrellisError } from '../../../kernel/errors.js';
import type { Hooks } from '../../../kernel/hooks.js';
import { authenticatorServiceIdentifier, configServiceIdentifier, hooksServiceIdentifier } from '../../../kernel/tokens.js';
import { idsServiceIdentifier, type Ids } from '../../../ports/ids.js';
import { passwordHasherServiceIdentifier, type PasswordHasher } from '../../../ports/password-hasher.js';
import { Team, TeamMember } from '../entities/team.entity.js';
import { User, type UserStatus } from '../entities/user.entity.js';
import { inTransaction } from '../../../kernel/transaction.js';

export interface CreateUserInput {
  email: string;
  password?: string | null;
  name?: string;
  avatarUrl?: string | null;
  isSiteAdmin?: boolean;
  isDeveloper?: boolean;
  isAdministrator?: boolean;
}

export interface UpdateUserInput {
  email?: string;
  name?: string;
  avatarUrl?: string | null;
  phone?: string | null;
  profile?: Record<string, unknown> | null;
  status?: UserStatus;
  isSiteAdmin?: boolean;
  isDeveloper?: boolean;
  isAdministrator?: boolean;
}

export const normaliseEmail = (email: string): string => email.trim().toLowerCase();

// A real Argon2id digest to verify against when the email is unknown, so a failed login costs the
// same time whether or not the account exists.
let decoyDigest: Promise<string> | undefined;

@injectable()
export class UserService {
  constructor(
    @inject(passwordHasherServiceIdentifier) private readonly hasher: PasswordHasher,
    @inject(idsServiceIdentifier) private readonly ids: Ids,
    @inject(hooksServiceIdentifier) private readonly hooks: Hooks,
    @inject(configServiceIdentifier) private readonly config: TrellisConfig,
    @inject(authenticatorServiceIdentifier) private readonly authenticator: Authenticator,
  ) {}

  /** Creates a user with a one-person personal team, in one transaction. */
  async create(em: EntityManager, input: CreateUserInput): Promise<User> {
    const email = normaliseEmail(input.email);
    if (input.password != null) this.checkPassword(input.password);
    const passwordHash = input.password != null ? await this.hasher.hash(input.password) : null;
    let created: User;
    try {
      // The unique index decides a race; the transaction only writes, so on SQLite shared by several
      // processes it never has to upgrade a read snapshot to a write (SQLITE_BUSY_SNAPSHOT).
      if (await em.count(User, { email })) throw emailTaken(email);
      created = await inTransaction(em, async (tx) => {
        const user = tx.create(User, {
          id: this.ids.next(),
          email,
          passwordHash,
          name: input.name?.trim() || email.split('@')[0]!,
          avatarUrl: input.avatarUrl ?? null,
          phone: null,
          profile: null,
          status: 'active',
          isSiteAdmin: input.isSiteAdmin ?? false,
          isDeveloper: input.isDeveloper ?? false,
          isAdministrator: input.isAdministrator ?? false,
        } as User);
        const team = tx.create(Team, { id: this.ids.next(), name: `${user.name}'s team`, personal: true } as Team);
        tx.create(TeamMember, { id: this.ids.next(), team, user, role: 'owner' } as TeamMember);
        return user;
      });
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw emailTaken(email);
      throw error;
    }
    await this.hooks.emit('user.created', { userId: created.id, email: created.email });
    return created;
  }

  async findById(em: EntityManager, id: string): Promise<User | null> {
    return em.findOne(User, { id });
  }

  async getById(em: EntityManager, id: string): Promise<User> {
    const user = await em.findOne(User, { id });
    if (!user) throw new TrellisError('not_found', 'user_not_found', 'No such user.');
    return user;
  }

  async findByEmail(em: EntityManager, email: string): Promise<User | null> {
    return em.findOne(User, { email: normaliseEmail(email) });
  }

  /** Checks an email and password; the same error for an unknown email and a wrong password. */
  async verifyCredentials(em: EntityManager, email: string, password: string): Promise<User> {
    const user = await this.findByEmail(em, email);
    if (!user || !user.passwordHash) {
      decoyDigest ??= this.hasher.hash('decoy password for timing');
      await this.hasher.verify(await decoyDigest, password);
      throw invalidCredentials();
    }
    if (!(await this.hasher.verify(user.passwordHash, password))) throw invalidCredentials();
    if (user.status !== 'active') throw accountDisabled();
    return user;
  }

  async update(em: EntityManager, id: string, input: UpdateUserInput): Promise<User> {
    const user = await this.getById(em, id);
    if (input.email !== undefined) {
      const email = normaliseEmail(input.email);
      if (email !== user.email && (await em.count(User, { email }))) throw emailTaken(email);
      user.email = email;
    }
    if (input.name !== undefined) user.name = input.name.trim();
    for (const key of ['avatarUrl', 'phone', 'profile', 'status', 'isSiteAdmin', 'isDeveloper', 'isAdministrator'] as const) {
      if (input[key] !== undefined) (user as unknown as Record<string, unknown>)[key] = input[key];
    }
    try {
      await em.flush();
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw emailTaken(user.email);
      throw error;
    }
    this.authenticator.invalidateUser(id);
    await this.hooks.emit('user.updated', { userId: id });
    return user;
  }

  async changePassword(em: EntityManager, id: string, currentPassword: string | null, newPassword: string): Promise<void> {
    const user = await this.getById(em, id);
    if (currentPassword !== null) {
      if (!user.passwordHash || !(await this.hasher.verify(user.passwordHash, currentPassword))) {
        throw new TrellisError('forbidden', 'invalid_current_password', 'The current password is wrong.');
      }
    }
    this.checkPassword(newPassword);
    user.passwordHash = await this.hasher.hash(newPassword);
    user.passwordChangedAt = new Date();
    await em.flush();
    this.authenticator.invalidateUser(id);
    await this.hooks.emit('user.updated', { userId: id });
  }

  private checkPassword(password: string): void {
    const min = this.config.auth.passwordMinLength;
    if (password.length < min) {
      throw new TrellisError('validation', 'weak_password', `The password must be at least ${min} characters long.`, {
        details: [{ field: 'password', constraint: 'minLength', message: `must be at least ${min} characters long` }],
      });
    }
  }
}

const emailTaken = (email: string) => new TrellisError('conflict', 'email_taken', `An account with the email ${email} already exists.`);
const invalidCredentials = () => new TrellisError('unauthenticated', 'invalid_credentials', 'The email or password is wrong.');
const accountDisabled = () => new TrellisError('unauthenticated', 'account_disabled', 'This account is disabled.');
