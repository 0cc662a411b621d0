/** FuncPipe's version, as `--version` prints it and as the MCP servers report it to agents. */
export const version = "0.1.0"
