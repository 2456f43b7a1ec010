"""Four of moto's own costs that hold nothing the emulator serves (not gaps: what AWS holds stays).

- moto's server lists its package folder (about 160 `stat` calls) on every request, under its
  dispatch lock, to tell a service name from a host name; the list never changes while it runs,
  so it is read once.
- Every region's EC2 backend, built again at each reset, makes an image object for each of about
  1,200 ECS-optimized AMIs (34 ms a region; a region sweep builds them all). Nothing here runs
  ECS: those are left out. moto's default and latest AMIs, which the emulator's AMI parameters
  point at (parameters.py), are loaded as before.
- moto's CloudFormation reads every template with PyYAML's pure-Python loader, JSON ones too
  (about 14 CPU-s of a whole run's emulator flows: the app's templates are JSON, tens of KB
  each, parsed at each create, update, change set and summary). A template that is a JSON
  document is read with `json` first: JSON is YAML's subset, and for the app's templates the two
  give the same dict (tests/emulator/test_lean.py); anything else goes to PyYAML as before.
- moto's KMS generates an RSA-2048 private key for every key it creates, symmetric ones too (the
  stacks' keys: about 5 CPU-s a run); only Sign, Verify and GetPublicKey use it. It is made
  on first use.
"""

from __future__ import annotations

import json
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
    read_json_templates_with_json()
    make_kms_private_keys_on_first_use()
    return lambda: None


class JsonFirstYaml:
    """The `yaml` module as moto's CloudFormation modules see it, but `load` reads a JSON
    document with `json` (JSON is a subset of YAML)."""

    def __init__(self, yaml_module: Any) -> None:
        self._yaml = yaml_module

    def __getattr__(self, name: str) -> Any:
        return getattr(self._yaml, name)

    def load(self, stream: Any, Loader: Any) -> Any:  # PyYAML's own keyword
        if isinstance(stream, str) and stream.lstrip().startswith("{"):
            try:
                return json.loads(stream)
            except ValueError:
                pass  # YAML in braces (a flow mapping), or a broken document: PyYAML says which
        return self._yaml.load(stream, Loader=Loader)


def read_json_templates_with_json() -> None:
    from moto.cloudformation import models, responses

    for module in (models, responses):
        if not isinstance(module.yaml, JsonFirstYaml):
            module.yaml = JsonFirstYaml(module.yaml)


class PrivateKeyOnFirstUse:
    """A KMS key's private key, generated the first time anything asks it for something."""

    def __init__(self, make: Callable[[], Any]) -> None:
        self._make = make
        self._key: Any = None

    def __getattr__(self, name: str) -> Any:
        if self._key is None:
            self._key = self._make()
        return getattr(self._key, name)


def make_kms_private_keys_on_first_use() -> None:
    from moto.kms import models

    generate = models.generate_private_key
    if getattr(generate, "on_first_use", False):
        return

    def generate_on_first_use(key_spec: str) -> Any:
        return PrivateKeyOnFirstUse(lambda: generate(key_spec))

    generate_on_first_use.on_first_use = True  # type: ignore[attr-defined]
    models.generate_private_key = generate_on_first_use
