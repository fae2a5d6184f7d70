import { IsIn, IsString, MaxLength } from 'class-validator';
import { Doc } from '../../../kernel/http/docs-metadata.js';
import { PageQuery } from '../../../kernel/http/dto/paging.js';

/** The resource types of the administrator's generic operations. */
export const adminResourceTypes = ['user', 'hardware', 'audit'] as const;
export type AdminResourceType = (typeof adminResourceTypes)[number];

export class AdminTypeQuery {
  @IsIn(adminResourceTypes)
  @Doc({ description: `One of ${adminResourceTypes.join(', ')}.` })
  type!: AdminResourceType;
}

export class AdminPointerQuery extends AdminTypeQuery {
  @IsString()
  @MaxLength(1024)
  @Doc({ description: 'RFC 6901 JSON Pointer into the type\'s schema.', example: '/properties/status' })
  pointer!: string;
}

export class AdminTypedListQuery extends PageQuery {
  @IsIn(adminResourceTypes)
  @Doc({ description: `One of ${adminResourceTypes.join(', ')}.` })
  type!: AdminResourceType;
}
