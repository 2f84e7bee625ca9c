"""Budget: monthly budgets per team and category, staff expenses against them, and their review.

The ``budget`` domain in one place: its MCP server (``server.py``), the data it adds to the seeded world
(``world.py``) and its task templates (``templates.py``).
"""
