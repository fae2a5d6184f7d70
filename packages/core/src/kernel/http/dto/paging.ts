import { Transform } from 'class-transformer';
import { IsInt, IsOptional, Max, Min } from 'class-validator';
import { Doc } from '../docs-metadata.js';

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

const toInt = ({ value }: { value: unknown }) => (typeof value === 'string' && /^-?\d+$/.test(value) ? Number(value) : value);

/**
 * Paging query accepted by every list: `page` (from 1) and a size under any of the spec's names
 * (`size`, `limit`, `pageSize`). Lists answer `{ items, total, page, size }`.
 */
export class PageQuery {
  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Doc({ description: 'Page number, from 1.', example: 1 })
  page?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  @Doc({ description: `Items per page (default ${DEFAULT_PAGE_SIZE}, at most ${MAX_PAGE_SIZE}).` })
  size?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  @Doc({ description: 'Same as size.' })
  limit?: number;

  @IsOptional()
  @Transform(toInt)
  @IsInt()
  @Min(1)
  @Max(MAX_PAGE_SIZE)
  @Doc({ description: 'Same as size.' })
  pageSize?: number;
}

export interface Paging {
  page: number;
  size: number;
  offset: number;
}

export function paging(query: PageQuery | undefined): Paging {
  const page = query?.page ?? 1;
  const size = query?.size ?? query?.limit ?? query?.pageSize ?? DEFAULT_PAGE_SIZE;
  return { page, size, offset: (page - 1) * size };
}

export interface Page<T> {
  items: T[];
  total: number;
  page: number;
  size: number;
}

export const pageOf = <T>(items: T[], total: number, p: Paging): Page<T> => ({ items, total, page: p.page, size: p.size });

/** One page of a list already held in memory (lists bounded per user: teams, members, keys). */
export const pageOfAll = <T>(all: T[], p: Paging): Page<T> => pageOf(all.slice(p.offset, p.offset + p.size), all.length, p);
