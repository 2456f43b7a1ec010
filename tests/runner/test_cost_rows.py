"""The cost package's rows typed at its boundary (runner/costing/rows.py): every row `runner.cost`
and `runner.advise` write reads back through `from_json` and writes again exactly as it was
(fields, values and their order); a malformed row is one line; a cost or advise file of another
rows version is refused in one line naming the file and both versions, and one written before
the version was recorded is read."""

from __future__ import annotations

import json

import pytest

from runner import report
from runner.core.errors import RunnerError
from runner.costing.rows import ROWS_SCHEMA, Advice, CostRow, Scaling, advice_in, cost_rows_in
from tests.runner.test_advise import aws_bench, run_advise
from tests.runner.test_cost import (
    BATCH_JOB,
    backend_entry,
    batch_evidence,
    bench_file,
    closed_loop,
    cold_warm_up,
    one_at_a_time,
    request,
    run_cost,
    write_evidence,
)


def every_kind_of_cost_row(tmp_path):
    """Cost evidence with a row of every kind: load levels of each billing model, a serverless
    cold start, async leaving zero (not measured), a Custom Model Import cold start with its wait
    and storage line, batch jobs (one priced, one without a price), a backend not billed by AWS,
    and the real-time endpoint's second-instance verdict."""
    records = [
        *one_at_a_time("sagemaker-serverless", [3.9, 4.1]),
        *closed_loop("sagemaker-async", 4, 2.0),
        request("sagemaker-async", 99, 400.0, 100, cold_start=True),
        *closed_loop("bedrock-import", 2, 50.0),
        *[r for c, e2e in {1: 1.0, 2: 1.1, 4: 2.0, 8: 4.0}.items() for r in closed_loop("sagemaker", c, e2e)],
        *one_at_a_time("local", [1.5]),
    ]
    warm_up = [
        cold_warm_up("sagemaker-serverless", 11.5, 11.3),
        cold_warm_up("bedrock-import", 29.0, 28.9, phases={"not_ready_s": 28.0}),
    ]
    backends = [
        backend_entry("sagemaker-serverless", endpoint_name="s", memory_mb=6144, max_concurrency=4),
        backend_entry("sagemaker-async", endpoint_name="a", bucket="b", input_prefix="i/", output_prefix="o/"),
        backend_entry("bedrock-import", bucket="b", input_prefix="w/", import_role_arn="r", weights_job="j"),
        backend_entry("sagemaker", endpoint_name="e", max_instances=2),
        backend_entry("local", source="embedded"),
    ]
    bench = write_evidence(tmp_path, backends, records, warm_up=warm_up, emulated=True)
    jobs = [BATCH_JOB, BATCH_JOB | {"job_name": "t-2", "instance_type": "ml.unknown.xlarge"}]
    return run_cost(tmp_path, bench, batch_evidence(tmp_path, jobs))


def test_every_cost_row_and_scaling_verdict_reads_back_and_writes_the_same_json(tmp_path):
    evidence = every_kind_of_cost_row(tmp_path)
    assert evidence["rows_schema"] == ROWS_SCHEMA
    levels = {r.get("level") for r in evidence["records"]}
    assert {"cold start", "leaving zero", "storage", "job t-1", "job t-2", "4 at a time"} <= levels
    assert any("note" in r for r in evidence["records"]) and evidence["scaling"]
    for record in evidence["records"]:
        assert list(CostRow.from_json(record).to_json().items()) == list(record.items())
        assert list(record)[:9] == COST_HEAD
        tail = COST_TAIL.get((record["billing"], record.get("level")))
        assert tail is None or list(record)[9:] == tail
    assert {(r["billing"], r.get("level")) for r in evidence["records"]} >= set(COST_TAIL)
    for scaling in evidence["scaling"]:
        assert list(Scaling.from_json(scaling).to_json().items()) == list(scaling.items())
    rows = cost_rows_in(evidence, "cost.json")
    cold = next(r for r in rows if r.backend == "bedrock-import" and r.level == "cold start")
    assert (cold.figures.phase, cold.figures.phase_s) == ("not_ready_s", 28.0)


def test_every_advice_option_reads_back_and_writes_the_same_json(tmp_path):
    bench = aws_bench(tmp_path)
    batch = batch_evidence(tmp_path, [BATCH_JOB])
    (tmp_path / "bedrock").mkdir()
    bedrock = bench_file(tmp_path / "bedrock", {"g6": 131.5})
    argv = ["--requests-per-day", "1000", "--latency-bound", "60"]
    evidence = run_advise(tmp_path, [bench, batch, bedrock], *argv)
    assert evidence["rows_schema"] == ROWS_SCHEMA
    billings = {r["billing"] for r in evidence["records"]}
    assert billings == {"instance-hours", "serverless-seconds", "model-unit-minutes", "job-instance-hours", "per-token"}
    for record in evidence["records"]:
        assert list(Advice.from_json(record).to_json().items()) == list(record.items())
        # The fields each adviser wrote before the rows were typed, in their order.
        assert list(record)[:9] == ADVICE_HEAD and list(record)[9:] == ADVICE_TAIL[record["billing"]]
    assert [a.option for a in advice_in(evidence, "advise.json")] == [r["option"] for r in evidence["records"]]


def test_a_level_priced_by_its_requests_says_its_price_per_million_even_without_output_tokens(tmp_path):
    records = one_at_a_time("sagemaker-serverless", [3.9, 4.1], tokens=0)
    backend = backend_entry("sagemaker-serverless", endpoint_name="s", memory_mb=6144, max_concurrency=4)
    (row,) = run_cost(tmp_path, write_evidence(tmp_path, [backend], records))["records"]
    assert row["usd_per_million_output"] is None and row["basis"].startswith("2 req: sum of e2e 8.00 s")
    assert list(CostRow.from_json(row).to_json().items()) == list(row.items())


ADVICE_HEAD = ["option", "billing", "evidence", "provenance", "monthly_usd", "arithmetic", "meets", "price", "why"]
ADVICE_TAIL = {
    "instance-hours": ["p95_s", "p95_ttft_s", "level", "notes", "accuracy"],
    "serverless-seconds": ["p95_s", "p95_ttft_s", "level", "cold_share", "notes", "accuracy"],
    "model-unit-minutes": ["p95_s", "p95_ttft_s", "level", "cold_share", "notes", "accuracy"],
    "job-instance-hours": ["p95_s", "level", "notes", "accuracy"],
    "per-token": ["p95_s", "p95_ttft_s", "notes", "accuracy"],
}
COST_HEAD = [
    "evidence", "backend", "billing", "provenance", "region", "billed_by", "price", "usd_per_hour", "usd_per_month_24x7"
]  # fmt: skip
COST_TAIL = {  # (billing, level): the fields after the head, as runner.cost wrote them before the rows were typed
    ("serverless-seconds", "1 at a time"): ["level", "figures", "output_tok_s", "usd_per_million_output", "basis"],
    ("serverless-seconds", "cold start"): ["level", "figures", "usd_per_event", "basis"],
    ("instance-hours-while-running", "4 at a time"): ["level", "figures", "output_tok_s", "usd_per_million_output",
                                                     "basis"],
    ("instance-hours-while-running", "leaving zero"): ["level", "figures", "usd_per_event", "basis"],
    ("model-unit-minutes", "2 at a time"): ["level", "figures", "output_tok_s", "usd_per_million_output",
                                           "sustained_usd_per_million_output", "basis"],
    ("model-unit-minutes", "cold start"): ["level", "figures", "basis"],
    ("model-unit-minutes", "storage"): ["level", "fixed_usd_per_month", "basis"],
    ("instance-hours", "4 at a time"): ["level", "figures", "output_tok_s", "usd_per_million_output",
                                        "breakeven_vs_bedrock_tok_s", "bedrock_usd_per_million_output"],
    ("job-instance-hours", "job t-1"): ["level", "figures", "output_tok_s", "usd_per_job", "usd_per_million_output",
                                        "basis"],
    ("job-instance-hours", "job t-2"): ["level", "figures", "output_tok_s", "note"],
    ("none", None): ["note"],
}  # fmt: skip


ROW = {
    "evidence": "bench.json",
    "backend": "g6",
    "billing": "instance-hours",
    "provenance": None,
    "region": "us-east-1",
    "billed_by": "g6.xlarge",
    "price": None,
    "usd_per_hour": 0.8048,
    "usd_per_month_24x7": 587.5,
}


@pytest.mark.parametrize(
    ("row", "line"),
    [
        ([ROW], "a cost row: expected a JSON object, got list"),
        ({k: v for k, v in ROW.items() if k != "billed_by"}, "a cost row of g6: no 'billed_by'"),
        (ROW | {"usd_per_hour": "cheap"}, "a cost row of g6: 'usd_per_hour' is 'cheap', not float | None"),
        (ROW | {"billing": "per-hug"}, "a cost row of g6: 'billing' is 'per-hug', not a billing model"),
        (ROW | {"price": {"service": "AmazonEC2"}}, "a cost row of g6, its price: no 'item'"),
        (ROW | {"level": "1 at a time", "figures": {"level": "1 at a time"}}, "its figures: no 'requests'"),
    ],
)
def test_a_malformed_cost_row_is_one_line(row, line):
    with pytest.raises(RunnerError) as error:
        CostRow.from_json(row)
    assert line in str(error.value) and "\n" not in str(error.value)


def test_a_malformed_advice_option_is_one_line_naming_its_file():
    evidence = {"command": "advise", "rows_schema": ROWS_SCHEMA, "records": [{"option": "g6", "billing": "none"}]}
    with pytest.raises(RunnerError) as error:
        advice_in(evidence, "advise.json")
    assert str(error.value) == "advise.json: an advice row of g6: no 'evidence'"


@pytest.mark.parametrize("command", ["cost", "advise"])
def test_a_file_of_another_rows_version_is_refused_in_one_line_and_an_older_one_is_read(tmp_path, command):
    evidence = every_kind_of_cost_row(tmp_path) if command == "cost" else None
    if evidence is None:
        evidence = run_advise(tmp_path, [aws_bench(tmp_path)], "--requests-per-day", "100")
    newer = tmp_path / f"{command}-newer.json"
    newer.write_text(json.dumps(evidence | {"rows_schema": ROWS_SCHEMA + 1}))
    with pytest.raises(RunnerError) as error:
        report.run([str(newer)])
    assert str(error.value) == (
        f"{newer}: {command} rows of version {ROWS_SCHEMA + 1}; this runner reads version {ROWS_SCHEMA} "
        f"(python -m runner.{command} writes them again)"
    )
    # Written before the version was recorded: version 1's rows, read as they are.
    older = tmp_path / f"{command}-older.json"
    older.write_text(json.dumps({k: v for k, v in evidence.items() if k != "rows_schema"}))
    assert report.run([str(older)]) == 0
