import { EntitySchema } from '@mikro-orm/core';
import { Block } from '../../blocks/index.js';
import { User } from '../../identity/index.js';

/**
 * A deployed block offered as an MCP tool (`PUT /block/:bid/mcp`): one row per block that opted
 * in. It goes with its block.
 */
export class McpTool {
  block!: Block;
  enabledBy!: User | null;
  createdAt!: Date;
}

export const McpToolSchema = new EntitySchema<McpTool>({
  class: McpTool,
  tableName: 'mcp_tools',
  properties: {
    block: { kind: '1:1', entity: () => Block, primary: true, owner: true, deleteRule: 'cascade' },
    enabledBy: { kind: 'm:1', entity: () => User, nullable: true, deleteRule: 'set null' },
    createdAt: { type: 'datetime' },
  },
});
