"""Marketplace: third-party sellers' listings, buyers' offers on them, and seller reviews.

The ``marketplace`` domain in one place: its MCP server (``server.py``), the data it adds to the seeded
world (``world.py``) and its task templates (``templates.py``).
"""
