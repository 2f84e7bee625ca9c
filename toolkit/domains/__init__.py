"""The kit's domains, each one package: its MCP server, the data it adds to the world, its task templates.

A domain ``<d>`` is the folder ``toolkit/domains/<d>/``:

- ``server.py``: a ``DomainServer`` subclass with ``name = "<d>"`` (the envs floor)
- ``world.py``: ``add_<d>(w, rng)``, adding collections prefixed ``<d>_`` to the core world (the envs floor)
- ``templates.py``: its ``@template("<d>_...", ...)`` functions (the synth floor)
- ``__init__.py``: what the domain is

``DOMAINS`` in ``toolkit/envs/domains.py`` is the one list of them. It stands on the envs floor, where
the servers are listed: a domain's package imports both floors (its server and world the envs floor,
its templates the synth floor), so nothing below it imports the package; each floor loads its own part
by name instead, as a registry loads its members (``toolkit.envs.registry`` the servers,
``toolkit.envs.world`` the world builders, ``toolkit.synth.templates.domains`` the templates).

The core servers (helpdesk, crm, directory, calendar, email, filesystem, shop, finance, weather, chat,
calculator) are no domain packages: they have no world module of their own. Their data is the core
world (``toolkit/envs/world.py``), which they share and cross-reference (a CRM customer is a helpdesk
requester), so they stay a set: servers in ``toolkit/envs/servers/``, templates in
``toolkit/synth/templates/`` beside the cross-domain mixes.
"""
