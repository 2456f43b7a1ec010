"""The vLLM tier handed to a worker once its server is up (an xdist scheduler).

The tier's server loads in the background from the run's start (tests/vllm/background.py): about
50 s at the machine's fast hours, up to two and a half minutes at its slow ones. xdist's
`loadgroup` hands the work out largest unit first, so the tier's group went to a worker about a
minute in, and that worker then waited for the server, idle, on the run's critical path. This is
`loadgroup` with one change: before each unit is handed out, the tier's group goes behind the rest
while its server has written no state, and to the front once it has (ready, or failed: then its
tests fail at once), so a worker takes other work meanwhile and the tier runs as soon as it can.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path

import pytest

from tests.vllm.background import STATE_ENV

GROUP = "vllm"


def server_ready() -> bool:
    """The background server has written its state (or there is none to wait for)."""
    state = os.environ.get(STATE_ENV)
    return not state or Path(state).is_file()


def place(queue: OrderedDict, group: str, ready: bool) -> None:
    """Before the next unit of work leaves `queue`: `group` last while not `ready`, first once it is."""
    if group in queue and len(queue) > 1:
        queue.move_to_end(group, last=not ready)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup`, the tier's group handed out once its server is up (imported by
    tests/conftest.py, where pytest takes it as a hook)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class LoadGroupTierWhenReady(LoadGroupScheduling):
        def _assign_work_unit(self, node) -> None:
            place(self.workqueue, GROUP, server_ready())
            super()._assign_work_unit(node)

    return LoadGroupTierWhenReady(config, log)
