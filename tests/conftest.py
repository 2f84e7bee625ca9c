"""Shared test settings.

- In CI, hypothesis draws the same examples every run (no flaky examples that a local run never saw);
  locally it explores new ones.
- ``make test`` runs the suite with pytest-xdist, a worker per core (at least 3, at most 4: the Makefile
  says why). Each test file stays whole on one worker, so its module fixtures (servers, engines) start
  once; the files whose tests start vLLM engines share one group, so two engines never fight over the
  same cores; the files that run the gold policy on synthesized helpdesk tasks share another, and the
  tasks (``helpdesk_own``). Each worker gets its share of the cores for OpenMP, at least one thread
  (torch, and the processes the tests start inherit it).
"""

import dataclasses
import os
from collections import OrderedDict
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# files whose tests start a vLLM engine (in-process or served)
VLLM_ENGINE_FILES = {
    "test_vllm_grpo",
    "test_vllm_policy",
    "test_vllm_server",
    "test_vllm_server_grpo",
    "test_train_backends",
}

# files that use the session's helpdesk_own tasks: one group, so they are synthesized once
OWN_SERVER_FILES = {"test_synth_own_server", "test_own_servers_at_scale"}

# the longest work units (pytest --durations on 2 cores), started first
LONGEST_UNITS = [
    "vllm-engines",
    "tests/test_notebooks.py",
    "own-servers",
    "tests/test_train_grpo.py",
    "tests/test_reliability_determinism.py",
]

# vllm.LLM runs its engine core in the test's process instead of a spawned one (read when vLLM is
# imported; the processes the tests start inherit it): `python -m bench.bench_vllm_inproc` on the 2-core
# AVX2 EPYC, alone: engine start 23.2 s in-process vs 53.1 s spawned (0.44x), rollout tokens/s 0.94x.
# Five engine starts a suite. `vllm serve` (test_vllm_server*) is not affected.
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")

_workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if _workers > 1 and "OMP_NUM_THREADS" not in os.environ:
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // _workers))


@pytest.fixture(scope="session")
def helpdesk_own():
    """Own-server tasks for the kit's helpdesk spoken to over stdio, named unlike the kit's helpdesk so
    only the task set's recipe can answer for it (``synthesize``'s result; about 15 s to make)."""
    from toolkit.synth import demo_servers
    from toolkit.synth.own_server import synthesize

    recipe = dataclasses.replace(demo_servers.recipe("helpdesk"), name="hd-stdio")
    return recipe, synthesize([recipe], n=14, n_eval=4, seed=3, writes=False, max_seconds=30)


def pytest_xdist_make_scheduler(config, log):
    """Work units of whole files, the vLLM engine files together as one unit and the own-server files as
    another (xdist's loadscope, with our own scopes: its loadgroup marks do not reach the node ids under
    pytest 9)."""
    from xdist.scheduler import LoadScopeScheduling

    class FileScheduling(LoadScopeScheduling):
        _heavy_first = False

        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            if Path(path).stem in VLLM_ENGINE_FILES:
                return "vllm-engines"
            return "own-servers" if Path(path).stem in OWN_SERVER_FILES else path

        def _assign_work_unit(self, node) -> None:
            if not self._heavy_first:  # the longest units start first, so no worker waits at the end
                self._heavy_first = True
                rank = {scope: i for i, scope in enumerate(LONGEST_UNITS)}
                order = sorted(self.workqueue, key=lambda scope: rank.get(scope, len(rank)))
                self.workqueue = OrderedDict((scope, self.workqueue[scope]) for scope in order)
            super()._assign_work_unit(node)

    return FileScheduling(config, log)
