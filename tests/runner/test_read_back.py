"""Evidence the survey reads back comes through typed readers: the fields it needs, the schema and
the command checked, and a file that lacks one is one line naming it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.core.errors import RunnerError
from runner.core.evidence import SCHEMA
from runner.flow.read_back import BatchEvidence, ImportEvidence, UpEvidence


def write(tmp_path: Path, command: str, **fields) -> Path:
    path = tmp_path / f"{command}.json"
    path.write_text(json.dumps({"schema": SCHEMA, "command": command, **fields}))
    return path


def test_up_evidence_reads_outcomes_billing_expiry_and_errors(tmp_path):
    path = write(
        tmp_path, "up", config={"expires_at": "2026-12-05T08:00:00Z"}, errors={"InferenceNeuronStack": "refused"},
        records=[{"backend": "g6", "outcome": "ready", "stack": "InferenceGpuStack", "region": "us-east-1"},
                 {"backend": "g5g", "outcome": "failed", "reason": "no NVIDIA GPU"}],
        billing=[{"backend": "g6", "region": "us-east-1", "what": "g6.xlarge instance i-1", "usd_per_hour": 0.8048}],
    )  # fmt: skip
    up = UpEvidence.read(path)
    assert [(o.backend, o.line, o.region) for o in up.outcomes] == [
        ("g6", "ready", "us-east-1"),
        ("g5g", "failed: no NVIDIA GPU", None),
    ]
    assert up.billing[0].usd_per_hour == 0.8048 and up.billing[0].to_json()["note"] == ""
    assert up.expires_at == "2026-12-05T08:00:00Z" and up.errors == {"InferenceNeuronStack": "refused"}


def test_import_and_batch_evidence_read_what_the_teardown_needs(tmp_path):
    assert ImportEvidence.read(write(tmp_path, "model_import", records=[{"outcome": "started"}])).started
    assert not ImportEvidence.read(write(tmp_path, "model_import", records=[{"outcome": "exists"}])).started
    batch = write(
        tmp_path, "batch", backends=[{"name": "sagemaker-batch", "region": "us-east-2"}], jobs=[{"job_name": "j-1"}, {}]
    )
    assert [(j.region, j.name) for j in BatchEvidence.read(batch).jobs] == [("us-east-2", "j-1")]


@pytest.mark.parametrize(
    ("content", "line"),
    [
        (
            {"schema": SCHEMA + 1, "command": "up"},
            f"is evidence of schema {SCHEMA + 1}; this runner reads schema {SCHEMA} (written by a newer runner",
        ),
        ({"schema": SCHEMA, "command": "bench"}, "bench evidence where up evidence was expected"),
        ({"schema": SCHEMA, "command": "up", "records": [{"backend": "g6"}]}, "the record of g6 has no 'outcome'"),
    ],
)
def test_a_file_of_another_schema_command_or_shape_is_one_line(tmp_path, content, line):
    path = tmp_path / "up.json"
    path.write_text(json.dumps(content))
    with pytest.raises(RunnerError) as error:
        UpEvidence.read(path)
    assert line in str(error.value) and "\n" not in str(error.value)
