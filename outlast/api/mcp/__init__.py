"""The MCP face (``/mcp``): every graph a tool, every call a durable run (routes.py)."""
