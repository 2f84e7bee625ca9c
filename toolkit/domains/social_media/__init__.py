"""Social media: brand pages of the CRM companies, staff and customer profiles, posts, comments, follows.

The ``social_media`` domain in one place: its MCP server (``server.py``), the data it adds to the seeded
world (``world.py``) and its task templates (``templates.py``).
"""
