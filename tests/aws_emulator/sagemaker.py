"""SageMaker endpoints by name: moto's CloudFormation gives an AWS::SageMaker::Endpoint a generated
name whatever the template's EndpointName says; AWS uses the given name (the app's is
`inference-sagemaker`, which the runner describes and, after the time-to-live, recreates)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def install(emulator: Any) -> Callable[[], None]:
    from moto.cloudformation import parsing
    from moto.sagemaker.models import FakeEndpoint

    original = FakeEndpoint.__dict__["cloudformation_name_type"]
    FakeEndpoint.cloudformation_name_type = staticmethod(lambda: "EndpointName")
    parsing.get_name_type_map.cache_clear()

    def undo() -> None:
        FakeEndpoint.cloudformation_name_type = original
        parsing.get_name_type_map.cache_clear()

    return undo
