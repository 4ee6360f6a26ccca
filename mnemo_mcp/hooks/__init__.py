"""Claude Code hooks: `mnemo-mcp hook EVENT` reads the event's JSON on stdin (`entry`), asks an
MCP server of the same database to handle it over a local socket (`channel`, `host`), or
handles it itself by keywords; `handlers` says what each event does, `events` reads the
payloads. Kept importable without pydantic, apsw or numpy: a hook must start in milliseconds."""
