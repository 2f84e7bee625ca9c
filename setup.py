"""The wheel carries the top-level data/ as toolkit/data (toolkit/paths.py DATA_DIR reads it there).

Everything else is in pyproject.toml; this file only adds that copy to setuptools' build_py, so the
repository keeps one copy of the data where a reader finds it (data/) and an installed kit still has it.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

DATA = Path(__file__).resolve().parent / "data"


class BuildPyWithData(build_py):
    def run(self):
        super().run()
        if not self.editable_mode:  # an editable install reads data/ in the checkout
            target = Path(self.build_lib) / "toolkit" / "data"
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(DATA, target)


setup(cmdclass={"build_py": BuildPyWithData})
