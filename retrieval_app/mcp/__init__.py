"""MCP: the ``mcp/*.yaml`` tool declarations, ``GET /tools``, and the MCP server over
Streamable HTTP (``POST /mcp``) and stdio (``manage.py mcp``), every tool a call of a REST route."""
