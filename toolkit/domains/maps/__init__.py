"""Maps: places with coordinates, search and nearby search, distances and routes by travel mode, geocoding,
opening hours, traffic incidents, and staff members' saved places.

The ``maps`` domain in one place: its MCP server (``server.py``), the data it adds to the seeded world
(``world.py``) and its task templates (``templates.py``).
"""
