"""Evidence as dataclasses, both ways: `to_json` is the one place a typed value becomes the JSON
its file holds (a dataclass's fields in order, each written as its own type writes it), and
`read_fields` reads a JSON object's fields back, each checked against the dataclass's type, a
missing required field or a value of the wrong type refused in one line. Shared by every package
that writes or reads evidence (the commands, `runner.figures`, `runner.costing`).

A field says how it is written in its metadata: `where_set()` (left out while it is its default,
as entries have always done for what only some of them have), `flat()` (a part whose keys sit in
the entry itself, not under its name) or `unwritten()` (kept, never written); a class lists the
figures it derives and writes after its fields (`JSON_DERIVED`).
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping
from dataclasses import MISSING, field, fields, is_dataclass
from enum import Enum
from functools import cache
from pathlib import PurePath
from typing import Any, Self, TypeVar, Union, get_args, get_origin, get_type_hints

from runner.core.errors import RunnerError

# A JSON value, as a file holds it: what is free-form by nature (a config as given, a tool call's
# arguments, what the in-region kit says of its host) is typed so, and everything else is a
# dataclass. (One level deep: a name that refers to itself would not resolve where `strands` or
# `get_type_hints` reads it.)
JsonValue = None | bool | int | float | str | list[Any] | dict[str, Any]
JsonObject = dict[str, JsonValue]

_HOW = "json"


class Unset:
    """The default of a field whose entry has it, even as null, only once it was set (`where_set(UNSET)`)."""

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "UNSET"


UNSET = Unset()


def where_set(default: Any = None) -> Any:
    """A field written only once it differs from its default (None, or UNSET where None is a
    value the entry writes): an entry has it only where it was set."""
    return field(default=default, metadata={_HOW: "where set"})


def flat(**kwargs: Any) -> Any:
    """A part of an entry whose keys are written in the entry itself, after the keys before it
    (none while it is None)."""
    return field(metadata={_HOW: "flat"}, **kwargs)


def unwritten(**kwargs: Any) -> Any:
    """A field kept on the object and never written (what the file held, for a reader)."""
    return field(metadata={_HOW: "unwritten"}, **kwargs)


# What JSON holds as it is: written without a look at anything else.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def to_json(value: object) -> JsonValue:
    """A typed value as its evidence file holds it: a value that writes itself (`to_json`) so, a
    dataclass as its fields (`fields_json`), an enum as its value, containers item by item."""
    kind = type(value)
    if kind in _SCALARS:
        return value  # type: ignore[return-value]  # a JSON scalar
    if kind is list or kind is tuple:
        return [item if type(item) in _SCALARS else to_json(item) for item in value]  # type: ignore[attr-defined]
    own = getattr(value, "to_json", None)
    if own is not None and not isinstance(value, type):
        return own()
    if is_dataclass(value) and not isinstance(value, type):
        return fields_json(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, Mapping):
        return {str(key): to_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(item) for item in value]
    return value  # type: ignore[return-value]  # strict_json writes anything else as text


@cache
def _written(cls: type) -> tuple[tuple[str, str | None, object], ...]:
    """How each field of `cls` is written (its name, its metadata's way, its default), worked out
    once per class: a bench's thousands of records are written at every save."""
    return tuple((spec.name, spec.metadata.get(_HOW), spec.default) for spec in fields(cls))


def fields_json(obj: Any) -> JsonObject:
    """A dataclass's entry: its fields in order as their metadata says, then what it derives."""
    data: JsonObject = {}
    for name, how, default in _written(type(obj)):
        value = getattr(obj, name)
        if how is None:
            data[name] = value if type(value) in _SCALARS else to_json(value)
        elif how == "flat":
            if value is not None:
                data.update(to_json(value))  # type: ignore[arg-type]  # a part is an object
        elif how == "where set" and value is not default:
            data[name] = to_json(value)
    for name in getattr(obj, "JSON_DERIVED", ()):
        data[name] = to_json(getattr(obj, name))
    return data


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
def _hints(cls: type) -> dict[str, object]:
    return get_type_hints(cls)


def read_fields(cls: type, data: object, what: str, *, apart: tuple[str, ...] = ()) -> dict[str, object]:
    """The fields of dataclass `cls` (all but `apart`, which the caller reads) from a JSON object,
    each checked against its type, and a field of a typed part (or a list of them) read by that
    part's `from_json`; a missing required field or a value of the wrong type is one line."""
    if not isinstance(data, dict):
        raise RunnerError(f"{what}: expected a JSON object, got {type(data).__name__}")
    hints = _hints(cls)
    found: dict[str, object] = {}
    for spec in fields(cls):
        if spec.name in apart or spec.metadata.get(_HOW) in ("flat", "unwritten"):
            continue
        if spec.name not in data:
            if spec.default is MISSING and spec.default_factory is MISSING:
                raise RunnerError(f"{what}: no {spec.name!r}")
            continue
        value, hint = data[spec.name], hints[spec.name]
        part = _part_reader(hint)
        if part is not None:
            found[spec.name] = part(value, f"{what}, its {spec.name.replace('_', ' ')}")
            continue
        if not fits(value, hint):
            raise RunnerError(f"{what}: {spec.name!r} is {value!r}, not {hint}")
        found[spec.name] = value
    return found


@cache
def _part_reader(hint: Any) -> Callable[[object, str], object] | None:
    """How a field typed as a dataclass is read (None: it is plain JSON): by its `from_json`; None
    where the type allows it; a list (or tuple) of parts entry by entry, each named by its place."""
    options = [arg for arg in get_args(hint) if arg not in (type(None), Unset)]
    if get_origin(hint) in (Union, types.UnionType):
        if len(options) != 1 or type(None) not in get_args(hint):
            return None
        inner = _part_reader(options[0])
        return None if inner is None else (lambda value, what: None if value is None else inner(value, what))
    if get_origin(hint) in (list, tuple) and options and is_dataclass(options[0]):
        read = reader_of(options[0])
        collect = list if get_origin(hint) is list else tuple

        def entries(value: object, what: str) -> object:
            if not isinstance(value, list):
                raise RunnerError(f"{what}: expected a list, got {type(value).__name__}")
            return collect(read(entry, f"{what}[{number}]") for number, entry in enumerate(value))

        return entries
    if get_origin(hint) is dict and len(options) == 2 and is_dataclass(options[1]):
        read_value = reader_of(options[1])

        def by_name(value: object, what: str) -> object:
            if not isinstance(value, dict):
                raise RunnerError(f"{what}: expected a JSON object, got {type(value).__name__}")
            return {name: read_value(entry, f"{what} of {name}") for name, entry in value.items()}

        return by_name
    if isinstance(hint, type) and is_dataclass(hint):
        return reader_of(hint)
    return None


def reader_of(cls: type) -> Callable[[object, str], Any]:
    """How an entry of dataclass `cls` is read: its own `from_json`, else field by field."""
    own = getattr(cls, "from_json", None)
    return own if own is not None else (lambda data, what: cls(**read_fields(cls, data, what)))


def read_sections(
    cls: type, data: Mapping[str, object], where: object = None, *, apart: tuple[str, ...] = ()
) -> dict[str, object]:
    """The fields of a whole file's dataclass from the file's JSON: a list of entries each read by
    its type and named by its place (`records[3] of g6`, as `read_entries` names it), any other
    part by its type, a plain value checked against its type; a section the file lacks takes its
    default; `apart` the caller reads. A malformed one is one line, prefixed with `where` (the file)."""
    hints = _hints(cls)
    found: dict[str, object] = {}
    for spec in fields(cls):
        if spec.name not in data or spec.name in apart or spec.metadata.get(_HOW) == "unwritten":
            continue
        value, hint = data[spec.name], hints[spec.name]
        entries = [arg for arg in get_args(hint) if arg is not type(None)]
        try:
            if get_origin(hint) is list and entries and is_dataclass(entries[0]):
                found[spec.name] = _entries(value, spec.name, reader_of(entries[0]))
                continue
            part = _part_reader(hint)
            if part is not None:
                found[spec.name] = part(value, spec.name)
            elif fits(value, hint):
                found[spec.name] = value
            else:
                raise RunnerError(f"{spec.name!r} is {value!r}, not {hint}")
        except RunnerError as error:
            raise RunnerError(f"{where}: {error}" if where is not None else str(error)) from None
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
    try:
        return _entries(evidence.get(key), key, read)
    except RunnerError as error:
        raise RunnerError(f"{where}: {error}" if where is not None else str(error)) from None


def _entries(entries: object, key: str, read: Callable[[object, str], T]) -> list[T]:
    if entries is None:
        return []
    if not isinstance(entries, list):
        raise RunnerError(f"{key!r} is not a list")
    found = []
    for number, entry in enumerate(entries):
        # Named by its backend: a record's `backend`, a backend entry's own `name`.
        backend = (entry.get("backend") or entry.get("name")) if isinstance(entry, dict) else None
        found.append(read(entry, f"{key}[{number}]" + (f" of {backend}" if isinstance(backend, str) else "")))
    return found


class FlatJson:
    """For a dataclass whose entry is its fields (`fields_json`): it reads back field by field
    through `read_fields` (a malformed entry one line)."""

    def to_json(self) -> JsonObject:
        return fields_json(self)

    @classmethod
    def from_json(cls, data: object, what: str) -> Self:
        return cls(**read_fields(cls, data, what))
