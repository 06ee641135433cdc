"""The faces of lens: the command line (``_cli``, ``_commands``), the MCP server (``_mcp``) and the web page
(``_serve``, its static files in ``static/``).

Each is a thin view of :class:`lens.Agent` and :class:`lens.AskResult`: it parses a request, runs the agent and
prints or returns the result. Nothing below imports a face.
"""
