"""Imports every template module so their ``@template`` registrations run.

Two kinds, both found by name: the modules of this package (the core servers' templates, the shared
helpers and the cross-domain mixes), so a new ``templates/<name>.py`` needs no line here; and each
domain's ``toolkit/domains/<domain>/templates.py``, for every name in ``toolkit.envs.domains.DOMAINS``.
They are imported in one sorted order of their names, as when every domain's templates sat here.
Registry order does not matter: the generator sorts template ids before sampling.
"""

import importlib
import pkgutil

import toolkit.synth.templates as _package
from toolkit.envs.domains import DOMAINS

_MODULES = {m.name: f"{_package.__name__}.{m.name}" for m in pkgutil.iter_modules(_package.__path__)}
_MODULES |= {domain: f"toolkit.domains.{domain}.templates" for domain in DOMAINS}
for _name in sorted(_MODULES):
    if _name != "domains":
        importlib.import_module(_MODULES[_name])
