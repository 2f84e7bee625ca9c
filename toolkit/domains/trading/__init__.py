"""Trading: an order book over the finance server's tickers, watchlists and price alerts.

The ``trading`` domain in one place: its MCP server (``server.py``), the data it adds to the seeded world
(``world.py``) and its task templates (``templates.py``).
"""
