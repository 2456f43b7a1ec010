"""A bench or batch evidence file's backends (`backends`), read back typed: each entry as
`Backend.to_json` (runner/core/backends.py) wrote it, with the keys added to it elsewhere (the
row's path and its note, `runner.measure.host_rows`; a Custom Model Import's units; a mark that
it was emulated or scripted), its catalog entry (`catalog`) and its stack output
(`stack_output`) as far as the readers (`runner.costing`, `runner.figures`, the reports) use
them.

A command that measures lists each backend as `BackendEntry.of(backend)`: the live backend's
own entry (`Backend.to_json`) with the facts the readers use typed beside it. The entry as the
file holds it is kept beside the typed fields (`to_json` gives it back as it was, with the path a
row measured where that was set since), so evidence that copies its backends on (runner.advise)
writes them unchanged. Only `name` is required: files written before a field existed, and the
entries other commands list (a stack output of `runner.model_import`), still read. A malformed
entry is refused in one line that names it and the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Self

from runner.core.typed_json import FlatJson, JsonObject, read_entries, read_fields, to_json, unwritten

if TYPE_CHECKING:
    from catalog.contract import BackendOutput
    from runner.core.backends import Backend


def model_units(value: object) -> int | None:
    """Custom Model Import units per model copy, as evidence may hold them: a number, or
    GetImportedModel's `customModelUnits` object; None when neither gives a positive count."""
    if isinstance(value, dict):
        value = value.get("customModelUnitsPerModelCopy")
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _units_in(data: Mapping[str, Any]) -> int | None:
    """The units an entry holds under either of the names evidence has used (the first that gives one)."""
    return next(
        (units for key in ("custom_model_units", "customModelUnits") if (units := model_units(data.get(key)))), None
    )


@dataclass(frozen=True)
class CatalogFacts(FlatJson):
    """The catalog entry an evidence file recorded for a backend (catalog/backends.py
    `BackendSpec`, enums as their values), the fields its readers use."""

    kind: str | None = None
    billing: str | None = None
    regions: list[str] = field(default_factory=list)
    instance_type: str | None = None
    # Serverless: memory size and the most requests at once; endpoints that scale: instance bounds.
    memory_mb: int | None = None
    max_concurrency: int | None = None
    min_instances: int | None = None
    max_instances: int | None = None
    root_volume_throughput_mbs: int | None = None
    # The single-request decode ceiling's inputs (figures.levels `roofline`).
    memory_bandwidth_gbs: float | None = None
    decode_read_gb: float | None = None
    # The survey's own figures, shown beside a user's (runner/render/beside.py, the bench table).
    survey_tok_s: list[float] = field(default_factory=list)
    survey_launch_to_ready_min: float | None = None
    survey_demo1: list[list[str | int]] = field(default_factory=list)
    survey_demo2_median_s: float | None = None
    survey_usd_per_hour: float | None = None
    survey_usd_per_million_output: float | None = None

    @classmethod
    def of(cls, spec: object) -> Self:
        """The facts of a live catalog entry (enums as their values, tuples as lists)."""
        return cls(**{f.name: to_json(getattr(spec, f.name)) for f in fields(cls) if hasattr(spec, f.name)})


@dataclass(frozen=True)
class StackOutputFacts:
    """The stack output an evidence file recorded for a deployed backend (catalog/contract.py
    `BackendOutput`), the fields its readers use; `custom_model_units` where it gives them."""

    region: str | None = None
    instance_type: str | None = None
    memory_mb: int | None = None
    max_concurrency: int | None = None
    max_instances: int | None = None
    custom_model_units: int | None = None

    @classmethod
    def from_json(cls, data: object, what: str) -> StackOutputFacts:
        found = read_fields(cls, data, what, apart=("custom_model_units",))
        assert isinstance(data, dict)  # read_fields refused anything else
        return cls(**found, custom_model_units=_units_in(data))  # type: ignore[arg-type]

    @classmethod
    def of(cls, output: object) -> Self:
        """The facts of a live stack output."""
        known = {f.name: getattr(output, f.name) for f in fields(cls) if f.name != "custom_model_units"}
        return cls(**known, custom_model_units=model_units(getattr(output, "custom_model_units", None)))


@dataclass(frozen=True)
class PricedAs(FlatJson):
    """What a backend is priced as because the user said so (`runner.cost` and `runner.advise`,
    `--price-as NAME=INSTANCE_TYPE` or `--price NAME=USD_PER_HOUR`): a server AWS does not bill
    (the embedded model, an `--endpoint` server) priced by the hour, as the instance it stands for
    or at the rate given; `flag` is the flag as given, shown beside the figures it priced."""

    flag: str
    instance_type: str | None = None
    usd_per_hour: float | None = None


@dataclass(frozen=True)
class BackendEntry:
    """One backend as an evidence file lists it."""

    name: str
    kind: str | None = None
    model_id: str | None = None
    # What the tables' model column shows (the model, its precision as served, its lane).
    model_label: str | None = None
    # Where the facts came from: `stack output`, `catalog`, `embedded`, `... --endpoint`.
    source: str | None = None
    region: str | None = None
    # bench --in-region: which path the row measured (`tunnel`, `in-region`) and the note that says
    # so; the instance a row on a server's own host ran on.
    path: str | None = None
    path_note: str | None = None
    instance_id: str | None = None
    # A mark that its figures came from emulated AWS or a scripted server (True, or what it was).
    emulated: str | bool | None = None
    scripted: str | bool | None = None
    # Custom Model Import units per model copy, where the entry gives them (either name it has used).
    custom_model_units: int | None = None
    # What the user priced it as (runner.cost, runner.advise), written into the entry they read.
    priced_as: PricedAs | None = None
    catalog: CatalogFacts | None = None
    stack_output: StackOutputFacts | None = None
    # The entry as the file holds it, every key included: what `to_json` gives back.
    raw: JsonObject = unwritten(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, backend: Backend) -> BackendEntry:
        """A backend as a command that measures it lists it: its own entry, its facts typed."""
        return cls(
            name=backend.name,
            kind=backend.kind.value,
            model_id=backend.model_id,
            model_label=backend.model_label,
            source=backend.source,
            region=backend.region,
            catalog=CatalogFacts.of(backend.spec) if backend.spec else None,
            stack_output=StackOutputFacts.of(backend.output) if backend.output else None,
            raw=backend.to_json(),
        )

    @classmethod
    def of_output(cls, output: BackendOutput) -> BackendEntry:
        """A deployed backend's stack output as a command that measures nothing lists it
        (`runner.model_import`): the output's own entry."""
        return cls(
            name=output.name, kind=output.kind, model_id=output.model_id, region=output.region, raw=output.to_json()
        )

    def to_json(self) -> JsonObject:
        """The entry as the file held it (runner.advise copies its options' entries on), with the
        path its row measured where that was set."""
        marks = {"path": self.path, "path_note": self.path_note, "instance_id": self.instance_id}
        return self.raw | {key: value for key, value in marks.items() if value is not None}

    @property
    def spec(self) -> CatalogFacts:
        """Its catalog entry's facts (every one unknown where the file recorded none)."""
        return self.catalog or CatalogFacts()

    @property
    def output(self) -> StackOutputFacts:
        """Its stack output's facts (every one unknown where the file recorded none)."""
        return self.stack_output or StackOutputFacts()

    @classmethod
    def from_json(cls, data: object, what: str) -> BackendEntry:
        found = read_fields(
            cls, data, what, apart=("custom_model_units", "priced_as", "catalog", "stack_output", "raw")
        )
        assert isinstance(data, dict)  # read_fields refused anything else
        catalog, output, priced = data.get("catalog"), data.get("stack_output"), data.get("priced_as")
        return cls(
            **found,  # type: ignore[arg-type]
            custom_model_units=_units_in(data),
            priced_as=PricedAs.from_json(priced, f"{what}, its price as given") if priced else None,
            catalog=CatalogFacts.from_json(catalog, f"{what}, its catalog entry") if catalog else None,
            stack_output=StackOutputFacts.from_json(output, f"{what}, its stack output") if output else None,
            raw=data,
        )


def entries_of(evidence: Mapping[str, Any], where: object = None) -> list[BackendEntry]:
    """An evidence file's backends (`backends`), typed, in order; a malformed one is one line
    naming it (prefixed with `where`, the file, when given)."""
    return read_entries(evidence, "backends", BackendEntry.from_json, where)
