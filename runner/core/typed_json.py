"""Evidence read back into dataclasses: a JSON object's fields checked against the dataclass's
types, a missing required field or a value of the wrong type refused in one line. Shared by every
package that types its evidence at its boundary (`runner.figures`, `runner.costing`).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from dataclasses import MISSING, fields
from functools import cache
from typing import Any, Self, TypeVar, Union, get_args, get_origin, get_type_hints

from runner.core.errors import RunnerError


def fits(value: object, hint: Any) -> bool:
    """Whether a JSON value fits a field's type (numbers: an int is a float; a bool is neither)."""
    return checker(hint)(value)


@cache
def checker(hint: Any) -> Callable[[object], bool]:
    """The test `fits` applies for one type, worked out once per type: a record's lists of chunk
    times are thousands of values a file, each checked against the same type."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        options = tuple(checker(arg) for arg in get_args(hint))
        return lambda value: any(check(value) for check in options)
    if hint is Any:
        return lambda value: True
    if hint is type(None):
        return lambda value: value is None
    if hint is float:
        return lambda value: isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int:
        return lambda value: isinstance(value, int) and not isinstance(value, bool)
    if origin in (list, tuple):
        item = checker(get_args(hint)[0])
        return lambda value: isinstance(value, list | tuple) and all(map(item, value))
    if origin is dict:
        return lambda value: isinstance(value, dict)
    return lambda value: isinstance(value, hint)


@cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def read_fields(cls: type, data: object, what: str, *, apart: tuple[str, ...] = ()) -> dict[str, Any]:
    """The fields of dataclass `cls` (all but `apart`, which the caller reads) from a JSON object,
    each checked against its type; a missing required field or a value of the wrong type is one line."""
    if not isinstance(data, dict):
        raise RunnerError(f"{what}: expected a JSON object, got {type(data).__name__}")
    hints = _hints(cls)
    found: dict[str, Any] = {}
    for spec in fields(cls):
        if spec.name in apart:
            continue
        if spec.name not in data:
            if spec.default is MISSING and spec.default_factory is MISSING:
                raise RunnerError(f"{what}: no {spec.name!r}")
            continue
        value = data[spec.name]
        if not fits(value, hints[spec.name]):
            raise RunnerError(f"{what}: {spec.name!r} is {value!r}, not {hints[spec.name]}")
        found[spec.name] = value
    return found


def named(data: object, key: str, what: str) -> str:
    """What an entry is, for a line that refuses it: `a cost row of g6`."""
    name = data.get(key) if isinstance(data, dict) else None
    return what + (f" of {name}" if isinstance(name, str) else "")


T = TypeVar("T")


class FromFile(dict):
    """A JSON object read from a file that remembers the file (`source`), so that an entry refused
    by a reader that was not told the file (a table, a figure) is still named with it."""

    def __init__(self, data: Mapping[str, Any], source: object) -> None:
        super().__init__(data)
        self.source = source


def read_entries(
    evidence: Mapping[str, Any], key: str, read: Callable[[object, str], T], where: object = None
) -> list[T]:
    """An evidence file's list under `key`, each entry read by `read(entry, what)`, in order; a
    malformed one is one line naming it by its place in the list, as the file's readers count
    (`records[3] of g6` is `jq '.records[3]'`), prefixed with `where`: the file (by default the one
    the evidence was read from, `FromFile`)."""
    if where is None:
        where = getattr(evidence, "source", None)
    entries = evidence.get(key) or []
    if not isinstance(entries, list):
        raise RunnerError(f"{where}: {key!r} is not a list" if where is not None else f"{key!r} is not a list")
    found = []
    for number, entry in enumerate(entries):
        # Named by its backend: a record's `backend`, a backend entry's own `name`.
        backend = (entry.get("backend") or entry.get("name")) if isinstance(entry, dict) else None
        what = f"{key}[{number}]" + (f" of {backend}" if isinstance(backend, str) else "")
        try:
            found.append(read(entry, what))
        except RunnerError as error:
            raise RunnerError(f"{where}: {error}" if where is not None else str(error)) from None
    return found


class FlatJson:
    """For a dataclass of plain JSON values: its entry is its fields in order, and it reads back
    field by field through `read_fields` (a malformed entry one line)."""

    def to_json(self) -> dict[str, Any]:
        return {spec.name: getattr(self, spec.name) for spec in fields(self)}  # type: ignore[arg-type]

    @classmethod
    def from_json(cls, data: object, what: str) -> Self:
        return cls(**read_fields(cls, data, what))
