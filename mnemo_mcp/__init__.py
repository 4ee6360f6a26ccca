"""mnemo-mcp: a local MCP memory server that learns from outcomes."""

__version__ = "0.1.0"
