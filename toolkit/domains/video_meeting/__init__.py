"""Video meetings (Zoom-like): staff-hosted meetings, many tied to calendar events, with attendance,
recordings and transcripts.

The ``video_meeting`` domain in one place: its MCP server (``server.py``), the data it adds to the seeded
world (``world.py``) and its task templates (``templates.py``).
"""
