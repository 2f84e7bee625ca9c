"""Imports every template module of this package so their ``@template`` registrations run.

Modules are found by name (sorted), so a new ``templates/<domain>.py`` needs no line here. Registry
order does not matter: the generator sorts template ids before sampling.
"""

import importlib
import pkgutil

import toolkit.synth.templates as _package

for _module in sorted(m.name for m in pkgutil.iter_modules(_package.__path__)):
    if _module != "domains":
        importlib.import_module(f"{_package.__name__}.{_module}")
