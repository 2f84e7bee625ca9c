"""Travel booking: flights and hotels, staff business trips, the bookings made for them, and travellers'
loyalty accounts.

The ``travel_booking`` domain in one place: its MCP server (``server.py``), the data it adds to the seeded
world (``world.py``) and its task templates (``templates.py``).
"""
