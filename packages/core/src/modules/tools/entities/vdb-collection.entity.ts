import { EntitySchema } from '@mikro-orm/core';
import { Team } from '../../identity/index.js';

/**
 * A vector database collection (`className`), one namespace per team, created on the first write.
 * It remembers the embedder its records were embedded with, so a changed embedder is detected
 * instead of comparing vectors from different models.
 */
export class VdbCollection {
  id!: string;
  team!: Team;
  name!: string;
  embedder!: string;
  dimension!: number;
  createdAt!: Date;
  updatedAt!: Date;
}

export const VdbCollectionSchema = new EntitySchema<VdbCollection>({
  class: VdbCollection,
  tableName: 'tool_vdb_collections',
  uniques: [{ properties: ['team', 'name'] }],
  properties: {
    id: { type: 'uuid', primary: true },
    team: { kind: 'm:1', entity: () => Team, deleteRule: 'cascade' },
    name: { type: 'string', length: 100 },
    embedder: { type: 'string', length: 200 },
    dimension: { type: 'integer' },
    createdAt: { type: 'datetime', onCreate: () => new Date() },
    updatedAt: { type: 'datetime', onCreate: () => new Date(), onUpdate: () => new Date() },
  },
});
