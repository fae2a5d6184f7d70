import { getMetadataStorage, IsInt, IsString, MetadataStorage } from 'class-validator';
import { describe, expect, it } from 'vitest';
import { memoizeRuleLookup, validateInput } from './validation.js';

class Base {
  @IsString()
  name!: string;
}

class Child extends Base {
  @IsInt()
  size!: number;
}

describe('memoizeRuleLookup', () => {
  it('answers what class-validator answers, own and inherited rules, with groups or without', () => {
    const plain = new MetadataStorage();
    const remembered = new MetadataStorage();
    for (const metadata of getMetadataStorage().getTargetValidationMetadatas(Child, '', true, false)) {
      plain.addValidationMetadata(metadata);
      remembered.addValidationMetadata(metadata);
    }
    for (const metadata of getMetadataStorage().getTargetValidationMetadatas(Base, '', true, false)) {
      plain.addValidationMetadata(metadata);
      remembered.addValidationMetadata(metadata);
    }
    memoizeRuleLookup(remembered);
    const names = (storage: MetadataStorage, target: Function, groups?: string[]) => storage.getTargetValidationMetadatas(target, '', false, false, groups).map((m) => `${m.propertyName}:${m.type}`).sort();
    for (let i = 0; i < 2; i++) {
      expect(names(remembered, Child)).toEqual(names(plain, Child));
      expect(names(remembered, Child)).toEqual(expect.arrayContaining([expect.stringMatching(/^name:/), expect.stringMatching(/^size:/)]));
      expect(names(remembered, Base)).toEqual(names(plain, Base));
      expect(names(remembered, Child, ['other'])).toEqual(names(plain, Child, ['other']));
    }
    // Each caller gets an array of its own.
    remembered.getTargetValidationMetadatas(Child, '', false, false).length = 0;
    expect(names(remembered, Child)).toEqual(names(plain, Child));
  });

  it('applies a rule added after a validation to the next one', async () => {
    class Late {
      @IsString()
      title!: string;
    }
    await expect(validateInput(Late, { title: 'a', extra: 1 }, 'body')).rejects.toMatchObject({ details: [{ field: 'extra', constraint: 'whitelistValidation' }] });
    // A rule for `extra`, registered after the class's rules were looked up (and remembered).
    IsInt()(Late.prototype, 'extra');
    const late = await validateInput(Late, { title: 'a', extra: 1 }, 'body');
    expect((late as Late & { extra: number }).extra).toBe(1);
    await expect(validateInput(Late, { title: 'a', extra: 'x' }, 'body')).rejects.toMatchObject({ details: [{ field: 'extra', constraint: 'isInt' }] });
  });
});
