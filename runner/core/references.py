"""Resolves the behaviour a serving row names by reference ("package.module:Name.attr", the form
of pip's `CommandInfo` and of entry points): the module is imported only when a kind that names it
is used, so boto3's and aiohttp's imports stay off the paths that do not need them."""

from __future__ import annotations

from functools import cache
from importlib import import_module
from typing import Any

from runner.core.errors import RunnerError


@cache
def resolve(reference: str) -> Any:
    """The object a reference names; a reference that names nothing is the catalog's bug, said in one line."""
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise RunnerError(f"serving reference {reference!r} is not 'package.module:name'")
    try:
        found: Any = import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as error:
        raise RunnerError(f"serving reference {reference!r} names nothing: {error}") from error
    return found
