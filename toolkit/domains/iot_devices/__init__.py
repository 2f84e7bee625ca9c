"""IoT devices: smart thermostats, sensors, lights, locks, cameras and plugs in the company's offices.

The ``iot_devices`` domain in one place: its MCP server (``server.py``), the data it adds to the seeded
world (``world.py``) and its task templates (``templates.py``).
"""
