"""The vLLM tier handed to a worker once its server is up (an xdist scheduler).

The tier's server loads in the background from the run's start (tests/vllm/background.py): about
50 s at the machine's fast hours, up to two and a half minutes at its slow ones. xdist's
`loadgroup` hands the work out largest unit first, so the tier's group went to a worker about a
minute in, and that worker then waited for the server, idle, on the run's critical path. This is
`loadgroup` with one change: before each unit is handed out, the tier's group goes behind the rest
while its server has written no state, and to the front once it has (ready, or failed: then its
tests fail at once), so a worker takes other work meanwhile and the tier runs as soon as it can.
Once the last test of the group has finished, the server is stopped (in the background), not at
the run's end: idle, its engine still spends about 8 % of a core (torch.distributed's gloo
threads), and its two processes hold about 2 GB that the other tests can use.
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


def group_finished(queue: OrderedDict, assigned: dict, group: str) -> bool:
    """Every test of `group` has been handed out and has finished (xdist's `assigned_work`: node
    -> unit -> test id -> finished)."""
    units = [work[group] for work in assigned.values() if group in work]
    return group not in queue and bool(units) and all(all(unit.values()) for unit in units)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup`, the tier's group handed out once its server is up (imported by
    tests/conftest.py, where pytest takes it as a hook)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class LoadGroupTierWhenReady(LoadGroupScheduling):
        tier_done = False

        def _assign_work_unit(self, node) -> None:
            place(self.workqueue, GROUP, server_ready())
            super()._assign_work_unit(node)

        def mark_test_complete(self, node, item_index: int, duration: float = 0) -> None:
            super().mark_test_complete(node, item_index, duration)
            if not self.tier_done and group_finished(self.workqueue, self.assigned_work, GROUP):
                self.tier_done = True
                background = getattr(config, "vllm_background", None)
                if background is not None:
                    background.stop_soon()

    return LoadGroupTierWhenReady(config, log)
