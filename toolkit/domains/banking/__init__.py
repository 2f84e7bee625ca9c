"""Banking: customers' checking and savings accounts, transactions, transfers, payees and cards.

The ``banking`` domain in one place: its MCP server (``server.py``), the data it adds to the seeded world
(``world.py``) and its task templates (``templates.py``).
"""
