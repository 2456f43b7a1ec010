"""An evidence file's backends read back typed (runner/core/backend_entries.py): an entry as bench
writes it (and as `--in-region` adds to it) reads its fields, its catalog entry and its stack
output, and gives back the entry exactly as the file held it; an older or other command's entry
reads with what it lacks unknown; a malformed one is refused in one line naming it and its file.
A record's marks (emulated, scripted) and a Custom Model Import's units are typed fields of the
record, written back only where given, and read by costing as attributes."""

from __future__ import annotations

import json

import pytest

from catalog import get_backend
from catalog.contract import BackendOutput
from runner.core.backend_entries import BackendEntry, CatalogFacts, entries_of, model_units
from runner.core.backends import Backend
from runner.core.errors import RunnerError
from runner.core.records import RequestRecord, records_of
from runner.costing.measured import custom_model_units, provenance


def written(name: str = "sagemaker-serverless", **output) -> dict:
    """A backend as bench writes it: catalog entry and stack output, through JSON."""
    spec = get_backend(name)
    stack_output = BackendOutput(
        name=name, kind=spec.kind.value, region="us-east-2", model_id=spec.model_id, port=spec.port,
        health_path=spec.health_path, instance_type=spec.instance_type, **output,
    )  # fmt: skip
    backend = Backend(name, spec.kind, spec.title, spec.model_id, "stack output", region="us-east-2", spec=spec,
                      output=stack_output)  # fmt: skip
    return json.loads(json.dumps(backend.to_json()))


def test_an_entry_reads_typed_and_gives_back_what_the_file_held():
    data = written(memory_mb=4096, max_concurrency=3) | {"path": "tunnel", "path_note": "through the tunnel"}
    text = json.dumps(data)
    (entry,) = entries_of({"backends": [data]}, "bench.json")
    spec = get_backend("sagemaker-serverless")
    assert (entry.name, entry.kind, entry.source, entry.region) == (
        "sagemaker-serverless", "sagemaker-serverless", "stack output", "us-east-2",
    )  # fmt: skip
    assert (entry.path, entry.path_note) == ("tunnel", "through the tunnel")
    assert entry.spec.billing == spec.billing.value and entry.spec.regions == list(spec.regions)
    assert (entry.output.memory_mb, entry.output.max_concurrency, entry.output.region) == (4096, 3, "us-east-2")
    assert json.dumps(entry.to_json()) == text


def test_an_entry_without_catalog_or_output_reads_with_them_unknown():
    (entry,) = entries_of({"backends": [{"name": "old", "kind": "openai"}]})
    assert entry.catalog is None and entry.spec == CatalogFacts() and entry.output.max_instances is None
    assert entries_of({}) == [] and entries_of({"backends": None}) == []


@pytest.mark.parametrize(
    ("data", "line"),
    [
        ({"kind": "ec2-vllm"}, "bench.json: backends[0]: no 'name'"),
        ({"name": "g6", "region": 2}, "bench.json: backends[0] of g6: 'region' is 2"),
        ({"name": "g6", "catalog": {"max_instances": "2"}}, "bench.json: backends[0] of g6, its catalog entry: "),
        ({"name": "g6", "stack_output": {"memory_mb": 1.5}}, "bench.json: backends[0] of g6, its stack output: "),
        ("g6", "bench.json: backends[0]: expected a JSON object, got str"),
    ],
)
def test_a_malformed_entry_is_one_line_naming_it_and_its_file(data, line):
    with pytest.raises(RunnerError) as caught:
        entries_of({"backends": [data]}, "bench.json")
    assert str(caught.value).startswith(line) and "\n" not in str(caught.value)


def test_custom_model_units_under_either_name_on_the_entry_its_output_or_a_record():
    assert model_units({"customModelUnitsPerModelCopy": 2}) == 2 and model_units(3) == 3
    assert model_units(0) is None and model_units(True) is None and model_units("2") is None
    entry = BackendEntry.from_json(
        {"name": "bedrock-import", "customModelUnits": {"customModelUnitsPerModelCopy": 2}}, "e"
    )
    assert custom_model_units(entry, []) == (2, None)
    output = BackendEntry.from_json({"name": "bedrock-import", "stack_output": {"custom_model_units": 4}}, "e")
    assert custom_model_units(output, []) == (4, None)
    bare = BackendEntry.from_json({"name": "bedrock-import"}, "e")
    (record,) = records_of({"records": [{"backend": "bedrock-import", "run": 1, "custom_model_units": 5}]})
    assert custom_model_units(bare, [record]) == (5, None)
    units, note = custom_model_units(bare, [])
    assert units == 1 and note and "assumed" in note


def test_a_records_marks_are_typed_written_back_only_where_given_and_label_its_backend():
    plain = RequestRecord("g6", 1, ok=True)
    assert not {"emulated", "scripted", "custom_model_units"} & set(plain.to_json())
    data = plain.to_json() | {"scripted": "fake_openai"}
    (back,) = records_of({"records": [data]})
    assert back.scripted == "fake_openai" and back.to_json()["scripted"] == "fake_openai"
    g6 = BackendEntry.from_json({"name": "g6", "kind": "ec2-vllm", "source": "stack output"}, "e")
    assert provenance({"config": {}}, g6, [back]) == "scripted server (fake_openai)"
    assert provenance({"config": {}}, g6, [plain]) is None
    emulated = records_of({"records": [plain.to_json() | {"emulated": True}]})
    assert provenance({"config": {}}, g6, emulated) == "emulated AWS"
