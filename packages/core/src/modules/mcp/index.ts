export { mcpModule } from './mcp.module.js';
export { McpTool, McpToolSchema } from './entities/mcp-tool.entity.js';
