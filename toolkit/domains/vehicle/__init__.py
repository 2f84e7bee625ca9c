"""Vehicle fleet: company cars assigned to staff, with telemetry, trips, service, fuel and reservations.

The ``vehicle`` domain in one place: its MCP server (``server.py``), the data it adds to the seeded world
(``world.py``) and its task templates (``templates.py``).
"""
