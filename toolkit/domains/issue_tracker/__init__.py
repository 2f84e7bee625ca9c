"""Issue tracker (Jira-like): engineering projects, sprints and issues; issues may link helpdesk tickets.

The ``issue_tracker`` domain in one place: its MCP server (``server.py``), the data it adds to the seeded
world (``world.py``) and its task templates (``templates.py``).
"""
