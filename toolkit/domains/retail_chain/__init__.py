"""Retail chain: the company's stores, stock of catalogue hardware per store, transfers between stores, and
store sales.

The ``retail_chain`` domain in one place: its MCP server (``server.py``), the data it adds to the seeded
world (``world.py``) and its task templates (``templates.py``).
"""
