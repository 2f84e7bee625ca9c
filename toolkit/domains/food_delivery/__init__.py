"""Food delivery: restaurants and their menus, customers' delivery orders, couriers and ratings.

The ``food_delivery`` domain in one place: its MCP server (``server.py``), the data it adds to the seeded
world (``world.py``) and its task templates (``templates.py``).
"""
