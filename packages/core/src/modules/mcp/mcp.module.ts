import { defineModule } from '../../kernel/module.js';
import { McpToolSchema } from './entities/mcp-tool.entity.js';
import { migrations } from './migrations/index.js';
import { mcpRoutes } from './routes.js';

/** The MCP server at `/mcp` (docs/mcp.md): deployed blocks that opt in, as tools. */
export const mcpModule = defineModule({
  name: 'mcp',
  dependsOn: ['blocks', 'runs', 'oauth'],
  entities: [McpToolSchema],
  migrations,
  routes: mcpRoutes,
});
