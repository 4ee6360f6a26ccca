"""Registering mnemo-mcp with MCP clients: Claude Code (claude_install), Codex CLI, Gemini CLI,
opencode, Cursor and VS Code (agents), on one shared way of editing their files (merge)."""
