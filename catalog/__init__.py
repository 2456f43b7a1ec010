"""The one typed catalog of inference backends, shared by the CDK stacks and the runner.

It imports nothing from aws-cdk-lib, so the runner starts fast and works without it.
"""

from catalog.backends import (
    BACKENDS,
    Accelerator,
    Architecture,
    BackendKind,
    BackendSpec,
    backend_names,
    get_backend,
)
from catalog.errors import CatalogError

__all__ = [
    "BACKENDS",
    "Accelerator",
    "Architecture",
    "BackendKind",
    "BackendSpec",
    "CatalogError",
    "backend_names",
    "get_backend",
]
