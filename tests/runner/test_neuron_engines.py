"""The Neuron rows' two engines as the runner meets them through their stack outputs: the
survey's tool-less graph (benchmarked, never sent tools, skipped by demo 1) and the vendor
engine (tools, so demo 1 runs against it), each behind a scripted server on loopback."""

from __future__ import annotations

import json

from catalog import get_backend
from catalog.backends import GEMMA4_E2B, NEURON_MODEL, SURVEY_NEURON_IMAGE, ModelArgument
from catalog.config import load_config
from runner import bench, counting
from runner.core.evidence import load
from runner.measure.bench_file import BenchFile
from tests.runner.fake_openai import FakeOpenAI, text, tool_call


def output(name: str, model: str, **extra) -> dict:
    return {
        "name": name,
        "kind": "ec2-neuron",
        "region": "us-east-2",
        "model_id": model,
        "port": 8080,
        "health_path": "/health",
        "auto_scaling_group": f"InferenceNeuronStack-{name}",
        "readiness_parameter": f"/inference/{name}/ready",
        "instance_type": get_backend(name).instance_type,
        "contract": 2,
        **extra,
    }


def outputs_file(tmp_path):
    path = tmp_path / "outputs.json"
    survey = output("inf2", GEMMA4_E2B, image=SURVEY_NEURON_IMAGE, supports_tools=False, max_total_tokens=512)
    vendor = output("trn1", NEURON_MODEL, image_build_project="InferenceNeuronStack-BuildNeuron", supports_tools=True)
    path.write_text(
        json.dumps({"InferenceNeuronStack": {"BackendInf2": json.dumps(survey), "BackendTrn1": json.dumps(vendor)}})
    )
    return path


def forwards(survey: FakeOpenAI, vendor: FakeOpenAI) -> list[str]:
    return [
        "--forward",
        f"inf2={survey.httpd.server_address[1]}",
        "--forward",
        f"trn1={vendor.httpd.server_address[1]}",
    ]


def test_the_survey_graph_is_benchmarked_and_never_sent_tools(tmp_path):
    with FakeOpenAI([text("The ocean is deep.")]) as survey, FakeOpenAI([text("The sea is wide.")]) as vendor:
        code = bench.run(
            ["--no-aws", "--local", "never", "--repeats", "2", "--outputs-file", str(outputs_file(tmp_path)),
             "--results-dir", str(tmp_path / "bench"), *forwards(survey, vendor)]
        )  # fmt: skip
        sent = survey.requests
    assert code == 0
    (path,) = (tmp_path / "bench").glob("*/bench-*.json")
    evidence = load(path)
    assert {r["backend"] for r in evidence["records"] if r["ok"]} == {"inf2", "trn1"}
    rows = {b["name"]: b for b in evidence["backends"]}
    assert (rows["inf2"]["supports_tools"], rows["inf2"]["max_total_tokens"]) == (False, 512)
    assert rows["inf2"]["model_id"] == GEMMA4_E2B and rows["trn1"]["model_id"] == NEURON_MODEL
    assert sent and all("tools" not in body and "tool_choice" not in body for body in sent)
    # The rows serve different weights, and the table says which.
    from runner.render.bench import bench_table

    columns = {c.header: list(c._cells) for c in bench_table(BenchFile.from_json(evidence)).columns}
    assert dict(zip(columns["backend"], columns["model"], strict=True)) == {"inf2": GEMMA4_E2B, "trn1": NEURON_MODEL}


def test_demo_1_runs_on_the_vendor_engine_and_skips_the_tool_less_graph(tmp_path):
    vendor_script = [
        tool_call("count_ids", {"op": ">=", "value": 10}),
        text("There are 8 ids of 10 or more.\nAnswer: 8"),
    ]
    with FakeOpenAI([text("8")]) as survey, FakeOpenAI(vendor_script) as vendor:
        code = counting.run(
            ["--no-aws", "--local", "never", "--runs", "1", "--outputs-file", str(outputs_file(tmp_path)),
             "--results-dir", str(tmp_path / "counting"), *forwards(survey, vendor)]
        )  # fmt: skip
        assert survey.requests == []  # never asked: its server ignores tool definitions
        assert any(t["function"]["name"] == "count_ids" for t in vendor.requests[0]["tools"])
    assert code == 0
    (path,) = (tmp_path / "counting").glob("*/counting-*.json")
    evidence = load(path)
    (record,) = evidence["records"]
    assert record["backend"] == "trn1" and record["passed"]
    assert "inf2: skipped, its server ignores tool definitions" in evidence["notices"]


def test_choosing_the_survey_image_brings_its_profile():
    default = {s.name: s for stack in load_config({}).stacks for s in (b.spec for b in stack.backends)}
    assert default["inf2"].model_id == NEURON_MODEL and default["inf2"].supports_tools
    assert default["inf2"].model_argument is ModelArgument.ENVIRONMENT and default["inf2"].image == "build:neuron"
    chosen = {
        s.name: s
        for stack in load_config({"inf2.image": SURVEY_NEURON_IMAGE}).stacks
        for s in (b.spec for b in stack.backends)
    }
    inf2 = chosen["inf2"]
    assert (inf2.model_id, inf2.supports_tools, inf2.max_total_tokens) == (GEMMA4_E2B, False, 512)
    assert inf2.model_argument is ModelArgument.NONE and inf2.data_volume == "gemma4-data:/data"
    assert inf2.container_env == ()
    assert chosen["trn1"].image == "build:neuron"  # the other row keeps the vendor engine
