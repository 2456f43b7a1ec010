"""An inference component's copies as a fleet of local servers, one per copy, behind SageMaker's
routing (tests/aws_emulator/routing.py): what a test measures a fleet on.

`fleet_behind(emulator, component, urls)` puts the router in front of the servers with the routing
of the component's endpoint (its variant's RoutingConfig, as DescribeEndpointConfig gives it;
none: least outstanding requests, what the runner assumes: the API names no default), serving the first CurrentCopyCount of
them; the component's runtime invocations (tests/aws_emulator/sagemaker_runtime.py) go to the
router, and UpdateInferenceComponentRuntimeConfig sets the router's copies as it sets the
component's. A copy count past the servers given is refused (ValidationException, the emulator's
words: a real endpoint's limit is the instances' accelerators, which inference_components.py
checks first). At zero copies the runtime refuses before the router is reached."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tests.aws_emulator.inference_components import components, validation, variant_of
from tests.aws_emulator.routing import RoutingConfig, RunningFleet, routed_fleet


def component_and_config(component: str) -> tuple[Any, RoutingConfig]:
    """The component (in any account and region) and its endpoint's routing, as the router takes it."""
    from moto.sagemaker.models import sagemaker_backends

    for account in list(sagemaker_backends):
        for region in list(sagemaker_backends[account]):
            backend = sagemaker_backends[account][region]
            found = components(backend).get(component)
            if found is None:
                continue
            variant = variant_of(backend, backend.endpoints[found.endpoint_name], found.variant_name)
            routing = variant.get("RoutingConfig") or {}
            prefix = routing.get("PrefixAwareRoutingConfig") or {}
            strategy = routing.get("RoutingStrategy") or "LEAST_OUTSTANDING_REQUESTS"
            return found, RoutingConfig(strategy, prefix.get("PrefixLength"), prefix.get("ConcurrencyThreshold"))
    raise LookupError(f"no inference component {component} in the emulator")


@contextmanager
def fleet_behind(emulator: Any, component: str, urls: list[str], *, seed: int = 0) -> Iterator[RunningFleet]:
    """The router over `urls` serves `component` for as long as the block runs."""
    found, config = component_and_config(component)
    serving = max(1, min(found.current_copies, len(urls)))
    operations = emulator.inference_components
    with routed_fleet(urls, config, copies=serving, seed=seed) as running:

        def set_copies(name: str, copies: int) -> None:
            if name != component or copies == 0:
                return
            if copies > len(urls):
                raise validation(
                    f"CopyCount {copies}: the emulator's fleet behind {component} has {len(urls)} server(s)."
                )
            running.fleet.set_copies(copies)

        operations.copy_hooks[component] = set_copies
        emulator.model_servers[component] = running.url
        try:
            yield running
        finally:
            operations.copy_hooks.pop(component, None)
            emulator.model_servers.pop(component, None)
