"""Two of moto's own costs that hold nothing the emulator serves (not gaps: what AWS holds stays).

- moto's server lists its package folder (about 160 `stat` calls) on every request, under its
  dispatch lock, to tell a service name from a host name; the list never changes while it runs,
  so it is read once.
- Every region's EC2 backend, built again at each reset, makes an image object for each of about
  1,200 ECS-optimized AMIs (34 ms a region; a region sweep builds them all). Nothing here runs
  ECS: those are left out. moto's default and latest AMIs, which the emulator's AMI parameters
  point at (parameters.py), are loaded as before.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ECS_AMIS = "ec2/resources/ecs/optimized_amis/"


def install(emulator: Any) -> Callable[[], None]:
    """Once per process, and kept: these change what moto costs, not what it answers, and one
    emulator's undo would otherwise lift them from under another still running in the process."""
    from moto import backends
    from moto.ec2.models import amis

    if getattr(amis, "load_without_ecs", None) is amis.load_resource:
        return lambda: None
    modules = tuple(backends.list_of_moto_modules())
    load_resource = amis.load_resource

    def load_without_ecs(resource: str) -> Any:
        return [] if resource.startswith(ECS_AMIS) else load_resource(resource)

    backends.list_of_moto_modules = lambda: modules
    amis.load_resource = amis.load_without_ecs = load_without_ecs
    return lambda: None
