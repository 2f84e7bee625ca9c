"""Payments (Stripe-like): customers' payment methods, payments for shop orders, refunds and invoices.

The ``payments`` domain in one place: its MCP server (``server.py``), the data it adds to the seeded world
(``world.py``) and its task templates (``templates.py``).
"""
