"""`runner.bench --in-region`: the same benchmark run on each EC2 server's own instance through SSM
Run Command, a second row per server beside its tunnel row.

The kit (`inference_constructs/bench_kit`) measures with the runner's own measuring core
(runner/timing: stream reading, records, warm-up, load engine, metrics reading), which the
construct copies into its asset; that core is tested once, where the runner uses it. Here, three
parts. The kit as shipped: the asset built as the CDK builds it, run as `python -I -S kit.zip`
(no site-packages: the standard library alone) against servers whose speed the test sets, its
figures read back by the runner. What still differs between the kit and the runner: the
transport (http.client on the host, aiohttp in the runner), held to give the same records and the
same one-line faults against the same scripted server, but for http.client's own words for a
dropped body. Then the whole path against moto in server mode: the readiness parameter names the
instance, SendCommand carries `AWS-RunShellScript` with its parameters as the document declares
them (read back with ListCommands), and the commands run under `sh` with the real AWS CLI, which
fetches the kit from S3 and writes its result to the evidence bucket; the runner reads it back and
deletes it.

The instances' side of Run Command, which moto does not run, is tests/runner/in_region_host.py
(the `instances` fixture, from tests/runner/conftest.py).
"""

from __future__ import annotations

import ast
import base64
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import boto3
import pytest

from catalog import BackendKind
from inference_constructs.in_region import CORE_DIR, KIT_DIR
from runner import bench
from runner.cloud.reach import in_region
from runner.core.backends import Backend
from runner.core.errors import RunnerError
from runner.core.evidence import Evidence, load
from runner.core.records import RequestRecord
from runner.measure import ChatRequest, host_rows
from runner.measure.bench_file import BenchFile
from runner.measure.benchmark import bench_backend
from runner.measure.load import LoadLevel, poisson_offsets
from runner.render import bench as bench_tables
from runner.timing.chat import warm_up
from runner.timing.faults import Unreachable, explain
from runner.timing.http_client import HttpStreamClient
from runner.timing.load import one_at_a_time
from tests.host.machine import BIN as HOST_BIN
from tests.runner.fake_openai import FakeOpenAI, Step, text
from tests.runner.in_region_host import kit_zip
from tests.runner.known_server import known, known_server

KIT = KIT_DIR
OCEAN = "The ocean covers most of the planet and holds most of its water"
ACCOUNT_BUCKET = "cdk-hnb659fds-assets-123456789012-{region}"
EVIDENCE_BUCKET = "inferencegpustack-inregionbenchevidence-{region}"
INSTANCE = {"g6": "i-0a1b2c3d4e5f60001", "inf2": "i-0a1b2c3d4e5f60002", "g5g": "i-0a1b2c3d4e5f60003"}
# AWS-RunShellScript's parameters as AWS's own document declares them (schema 1.2).
RUN_SHELL_SCRIPT_PARAMETERS = {
    "commands": {"type": "StringList", "minItems": 1},
    "workingDirectory": {"type": "String", "maxChars": 4096},
    "executionTimeout": {
        "type": "String",
        "allowedPattern": r"([1-9][0-9]{0,4})|(1[0-6][0-9]{4})|(17[0-1][0-9]{3})|(172[0-7][0-9]{2})|(172800)",
    },
}
RECORD_FIELDS = set(RequestRecord(backend="x", run=1).to_json())


def encoded(config: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(config).encode()).decode()


def run_kit(kit: Path, config: dict[str, Any], out: Path, *args: str) -> subprocess.CompletedProcess:
    """The zip as the instance runs it, with nothing but the standard library: `-I` (no user site,
    no PYTHON* variables), `-S` (no site-packages)."""
    command = [sys.executable, "-I", "-S", str(kit), "--config", encoded(config), "--out", str(out), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def kit_result(kit: Path, config: dict[str, Any], tmp_path: Path, *args: str) -> dict[str, Any]:
    done = run_kit(kit, config, tmp_path / "result.json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads((tmp_path / "result.json").read_text())


def kit_config(url: str, repeats: int, timeout_s: float = 5.0, **extra: Any) -> dict[str, Any]:
    return {
        "backend": "x",
        "base_url": f"{url}/v1",
        "model_id": "fake-model",
        "prompt": bench.PROMPT,
        "max_tokens": 100,
        "temperature": 0.0,
        "usage_per_chunk": False,
        "repeats": repeats,
        "timeout_s": timeout_s,
        "warm_up": host_rows.kit_warm_up(),
    } | extra


# --- the kit as shipped -----------------------------------------------------------------------


def test_the_asset_holds_the_kit_and_the_runners_measuring_core_as_they_are(kit):
    """What the construct stages: the kit's program at the root and the core's files byte for byte
    (no copy of the measuring to drift); the kit's program imports only the standard library and
    the core."""
    with zipfile.ZipFile(kit) as archive:
        shipped = {name: archive.read(name) for name in archive.namelist()}
    core = {f"timing/{path.name}": path.read_bytes() for path in CORE_DIR.glob("*.py")}
    assert shipped == {"__main__.py": (KIT_DIR / "__main__.py").read_bytes()} | core
    tree = ast.parse(shipped["__main__.py"])
    imported = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported <= set(sys.stdlib_module_names) | {"timing"}, imported
    assert sorted(p.name for p in KIT_DIR.iterdir() if p.name != "__pycache__") == ["__main__.py"]


def test_the_shipped_kit_runs_on_the_standard_library_alone_and_the_runner_reads_its_figures(kit, tmp_path):
    """A server whose costs the test sets: time to first token 0.2 s, 50 tokens a second, 10
    tokens asked. Each timed request then takes at least 0.2 + 9 / 50 s, counts 10 output tokens
    and the prompt's words plus the template's 4 and the BOS."""
    ttft, rate, tokens = 0.2, 50.0, 10
    prompt = "one two three four five six seven"
    with known_server(ttft=ttft, rate=rate, tokens=100) as server:
        config = kit_config(server.url, 2, prompt=prompt, max_tokens=tokens, model_id=known.MODEL)
        done = run_kit(kit, config, tmp_path / "result.json")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"bench kit: x: 2/2 ok on {os.cpu_count()} vCPUs" and not done.stderr
    result = in_region.KitResult.from_json(json.loads((tmp_path / "result.json").read_text()), "result.json")
    assert result.kit == 4 and result.client["connections_opened"] == 1 and result.host["vcpus"] == os.cpu_count()
    # What it measured, under RequestRecord's names, read back as the runner reads it.
    assert all(set(entry) <= RECORD_FIELDS for entry in [*result.records, *result.warm_ups])
    records = [host_rows.kit_request(entry, "x@host") for entry in result.records]
    (warm,) = [host_rows.kit_request(entry, "x@host") for entry in result.warm_ups]
    assert warm.ok and warm.output_tokens == 4 and warm.new_connection is True
    prompt_tokens = len(prompt.split()) + known.TEMPLATE_TOKENS + 1
    for record in records:
        assert record.ok and (record.output_tokens, record.prompt_tokens, record.token_source) == (
            tokens, prompt_tokens, "server"
        )  # fmt: skip
        assert record.finish_reason == "length" and record.new_connection is False and record.label == "1 at a time"
        fastest = ttft + (tokens - 1) / rate  # the server's own pace: no request can beat it
        assert record.ttft_s >= ttft and record.e2e_s >= fastest and record.tokens_per_s <= tokens / fastest
        assert len(record.chunk_times) == tokens and record.chunk_times[0] == record.ttft_s


def test_load_levels_run_on_the_shipped_kit_with_a_connection_per_request_in_flight(kit, tmp_path):
    """Two at a time, four requests, then 20/s capped at 2, six requests: each level opens as many
    connections as it keeps in flight, each by an untimed warm-up, and never has more in flight;
    the open level sends at the seeded Poisson offsets (a send held by the cap goes late, measured)."""
    closed, opened = LoadLevel("concurrency", 2, 4), LoadLevel("rate", 20.0, 6, max_concurrency=2)
    with FakeOpenAI([text(OCEAN, first_token_delay_s=0.2)]) as server:
        result = kit_result(
            kit, kit_config(server.url, 1, levels=[closed.to_json(), opened.to_json()], seed=11), tmp_path
        )
    assert server.max_in_flight == 2
    assert result["client"]["connections_opened"] == 4 and len(set(server.connection_ids)) == 4
    assert [w["level"]["label"] for w in result["warm_ups"]] == ["2 at a time"] * 2 + ["20/s, at most 2"] * 2
    records = [host_rows.kit_request(entry, "x@host") for entry in result["records"]]
    assert all(r.ok and r.new_connection is False for r in records)
    two = sorted((r for r in records if r.label == "2 at a time"), key=lambda r: r.run)
    assert [r.run for r in two] == [1, 2, 3, 4] and all(r.ttft_s >= 0.2 for r in two)
    first_end = min(r.sent_s + r.e2e_s for r in two[:2])
    assert max(r.sent_s for r in two[2:]) >= first_end - 0.01  # the third goes once one of the first two ended
    rate = sorted((r for r in records if r.label == "20/s, at most 2"), key=lambda r: r.run)
    assert [r.scheduled_s for r in rate] == poisson_offsets(20.0, 6, 11)
    assert all(r.sent_s >= r.scheduled_s - 0.01 for r in rate)
    (span_closed, span_open) = result["level_spans"]
    assert span_closed[0] < span_closed[1] <= span_open[0] < span_open[1]


def test_a_configuration_the_kit_cannot_run_is_one_line_and_exit_2(kit, tmp_path):
    out = tmp_path / "out.json"
    level = kit_config("http://127.0.0.1:9", 1, levels=[{"mode": "burst", "value": 2, "requests": 4}])
    for config, words in (
        (level, "bench kit: a level must be a LoadLevel's JSON"),
        ({"backend": "x"}, "bench kit: --config lacks base_url, model_id, repeats"),
    ):
        done = run_kit(kit, config, out)
        assert done.returncode == 2 and done.stderr.startswith(words) and done.stderr.count("\n") == 1, done.stderr
    bad = subprocess.run(
        [sys.executable, "-I", "-S", str(kit), "--config", "not base64!", "--out", str(out)],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    (line,) = bad.stderr.strip().splitlines()
    assert bad.returncode == 2 and line.startswith("bench kit: --config is not base64 JSON: ") and not out.exists()


def tools_on_path(tmp_path: Path, monkeypatch, *tools: str) -> None:
    """PATH: the host stand-ins named (tests/host/bin) and the system's own folders, nothing else."""
    folder = tmp_path / "tools"
    folder.mkdir()
    for tool in tools:
        (folder / tool).symlink_to(HOST_BIN / tool)
    monkeypatch.setenv("PATH", os.pathsep.join([str(folder), "/usr/bin", "/bin"]))


def test_the_gpu_is_read_by_nvidia_smi_while_the_kit_measures(kit, tmp_path, monkeypatch):
    tools_on_path(tmp_path, monkeypatch, "nvidia-smi", "neuron-monitor")
    monkeypatch.setenv("HOST_GPU", "1")
    monkeypatch.setenv("HOST_GPU_UTIL", "62")
    monkeypatch.setenv("HOST_GPU_MEMORY_MIB", "15000")
    with FakeOpenAI([text(OCEAN, first_token_delay_s=0.6)]) as server:
        result = kit_result(kit, kit_config(server.url, 2), tmp_path)
    accelerator = result["accelerator"]
    assert accelerator["tool"] == "nvidia-smi" and accelerator["problem"] is None
    assert len(accelerator["samples"]) >= 2 and {tuple(s[1:]) for s in accelerator["samples"]} == {(62.0, 15000.0)}
    assert (accelerator["utilization_pct_mean"], accelerator["memory_used_mib_max"]) == (62.0, 15000.0)
    note = host_rows.accelerator_note(accelerator)
    assert note.startswith("; GPU busy 62 % mean, 62 % max, 14.6 GiB used (nvidia-smi, ")


def test_neuroncores_are_read_by_neuron_monitor_where_no_gpu_answers(kit, tmp_path, monkeypatch):
    tools_on_path(tmp_path, monkeypatch, "nvidia-smi", "neuron-monitor")
    (tmp_path / "root" / "dev").mkdir(parents=True)
    (tmp_path / "root" / "dev" / "neuron0").write_text("")
    monkeypatch.delenv("HOST_GPU", raising=False)
    monkeypatch.setenv("INFERENCE_ROOT", str(tmp_path / "root"))
    monkeypatch.setenv("HOST_NEURON_UTIL", "30,50")
    monkeypatch.setenv("HOST_NEURON_MEMORY_BYTES", str(3 * 2**30))
    with FakeOpenAI([text(OCEAN, first_token_delay_s=0.3)]) as server:
        result = kit_result(kit, kit_config(server.url, 2), tmp_path)
    accelerator = result["accelerator"]
    assert accelerator["tool"] == "neuron-monitor" and accelerator["samples"]
    # The mean over the NeuronCores in use, and the runtime's device memory.
    assert (accelerator["utilization_pct_mean"], accelerator["memory_used_mib_max"]) == (40.0, 3072.0)
    assert host_rows.accelerator_note(accelerator).startswith("; NeuronCores busy 40 % mean, 40 % max, 3.0 GiB used")


def test_a_host_without_an_accelerator_tool_says_so_and_measures_anyway(kit, tmp_path, monkeypatch):
    tools_on_path(tmp_path, monkeypatch)
    with FakeOpenAI([text(OCEAN)]) as server:
        result = kit_result(kit, kit_config(server.url, 1), tmp_path)
    assert [r["ok"] for r in result["records"]] == [True]
    assert result["accelerator"]["problem"] == "no nvidia-smi or neuron-monitor on the host"
    assert host_rows.accelerator_note(result["accelerator"]) == (
        "; accelerator not read: no nvidia-smi or neuron-monitor on the host"
    )


def test_the_kits_result_is_read_back_typed_and_a_result_it_cannot_read_is_one_line(kit, tmp_path):
    """What the kit writes reads back as a KitResult (this kit's own result, a version-3 one, whose
    records held every field, and a version-2 one, which kept its one-at-a-time warm-up apart); a
    kit this runner does not know, or records that are not a list of objects, are one line each."""
    with FakeOpenAI([text(OCEAN)]) as server:
        written = kit_result(kit, kit_config(server.url, 2), tmp_path)
    result = in_region.KitResult.from_json(written, "r.json")
    assert result.kit == 4 and len(result.records) == 2 and len(result.warm_ups) == 1
    assert result.host["vcpus"] == os.cpu_count() and result.accelerator["tool"] is None
    full = [RequestRecord.from_json(r, "r").to_json() for r in written["records"]]
    third = in_region.KitResult.from_json(written | {"kit": 3, "records": full}, "r.json")
    assert [host_rows.kit_record(r, "x@host") for r in third.records] == [
        host_rows.kit_record(r, "x@host") for r in written["records"]
    ]
    older = {k: v for k, v in written.items() if k not in ("warm_ups", "level_spans")} | {"kit": 2}
    assert in_region.KitResult.from_json(older, "r.json").warm_ups == [written["warm_up"]]
    refusals = {
        "from a newer kit": (
            written | {"kit": 5},
            "r.json was written by bench kit 5; this runner reads kits 2, 3, 4: ",
        ),
        "records not a list": (written | {"records": {"a": 1}}, "r.json: 'records' is {'a': 1}, not"),
        "a record not an object": (written | {"records": [1]}, "r.json: 'records' is [1], not"),
        "a warm-up not an object": (written | {"warm_ups": ["hi"]}, "r.json: its warm-ups must be JSON objects"),
        "no host": ({k: v for k, v in written.items() if k != "host"}, "r.json: no 'host'"),
    }
    for case, (data, words) in refusals.items():
        with pytest.raises(RunnerError) as refused:
            in_region.KitResult.from_json(data, "r.json")
        assert str(refused.value).startswith(words) and "\n" not in str(refused.value), case


# --- what still differs: the transport ----------------------------------------------------------

COMPARED = (
    "run",
    "ok",
    "output_tokens",
    "prompt_tokens",
    "token_source",
    "finish_reason",
    "text",
    "chunks",
    "server_timings",
    "new_connection",
    "stale_connection_retry",
    "chunk_token_counts",
    "level",
)


def runner_records(url: str, repeats: int, timeout_s: float, tmp_path: Path) -> tuple[dict, list[dict]]:
    """What `bench_backend` (the tunnel row's code, aiohttp) records against `url`: (warm-up, records)."""
    backend = Backend(
        name="x", kind=BackendKind.OPENAI, title="x", model_id="fake-model", source="test", base_url=f"{url}/v1"
    )
    evidence = Evidence("bench", {}, tmp_path / "runner-evidence")
    evidence.data["warm_up"] = []
    request = ChatRequest(prompt=bench.PROMPT, max_tokens=100, temperature=0.0)
    bench_backend(backend, request, repeats, timeout_s, evidence, lambda *_: None)
    return evidence.data["warm_up"][0], evidence.data["records"]


def kit_records(url: str, repeats: int, timeout_s: float) -> tuple[dict, list[dict]]:
    """What the kit's transport (http.client) records against `url`, one at a time as the kit
    sends: the same warm-up, then `repeats` requests on its connection."""
    client = HttpStreamClient(f"{url}/v1", "fake-model", timeout_s)
    level = LoadLevel("concurrency", 1, repeats).recorded()
    request = ChatRequest(prompt=bench.PROMPT, max_tokens=100, temperature=0.0)
    try:
        warm = warm_up(client.chat, RequestRecord(backend="x", run=0), explain)
        records = one_at_a_time(
            client.chat,
            explain,
            request,
            repeats,
            lambda run: RequestRecord(backend="x", run=run, level=level),
            down=lambda error: isinstance(error, Unreachable),
        )
    finally:
        client.close()
    return warm.to_json(), [r.to_json() for r in records]


def same_figures(kit: dict, runner: dict, *, error_prefix: bool = False) -> None:
    assert {k: kit[k] for k in COMPARED} == {k: runner[k] for k in COMPARED}
    assert len(kit["chunk_times"]) == len(runner["chunk_times"])
    for key in ("ttft_s", "e2e_s", "tokens_per_s", "decode_tokens_per_s", "client_overhead_s"):
        assert (kit[key] is None) == (runner[key] is None), key
    if error_prefix and runner["error"]:
        assert kit["error"].split(":")[0] == runner["error"].split(":")[0]
    else:
        assert kit["error"] == runner["error"]


FAULTS = {
    "a whole answer": [text(OCEAN, first_token_delay_s=0.01)],
    "client count": [text(OCEAN, usage=False)],
    "server timings": [text(OCEAN, timings={"prompt_ms": 1.0, "predicted_ms": 2.0, "predicted_per_second": 50.0})],
    "tool call": [Step(kind="tool", tool_calls=[("add_numbers", '{"a": 1, "b": 2}')])],
    "abnormal finish": [text(OCEAN, finish="content_filter")],
    "stream cut": [Step(kind="cut", text=OCEAN)],
    "malformed": [Step(kind="malformed", gap_s=0.3)],
    "empty body": [Step(kind="empty")],
    "http 500": [Step(kind="http_error", status=500)],
    "context overflow": [
        Step(kind="http_error", status=400, error_body='{"error": {"message": "maximum context length is 8192"}}')
    ],
    "a proxy's page": [
        Step(kind="http_error", status=502, error_body="<html>bad gateway</html>", content_type="text/html")
    ],
    "not an event stream": [Step(kind="body", text="Paris", content_type="text/plain")],
    "negative usage": [text(OCEAN, usage_tokens=-5)],
    "server closes reused connections": [text(OCEAN, close="on-reuse")],
    "dropped mid-body": [Step(kind="drop", text=OCEAN)],
    "hang": [Step(kind="hang")],
}


@pytest.mark.parametrize("case", FAULTS)
def test_the_kits_transport_reads_every_answer_and_fault_as_the_runners_does(case, tmp_path):
    """The same bytes through the same stream reading (runner/timing/stream.py): what the
    transports still do apart is opening, reusing and losing a connection. The same records, the
    same one-line faults, and the same requests sent, but for http.client's words for a body
    dropped mid-stream (after the runner's own prefix)."""
    timeout = 0.3 if case == "hang" else 5.0
    with FakeOpenAI(list(FAULTS[case])) as ours, FakeOpenAI(list(FAULTS[case])) as theirs:
        warm, records = kit_records(ours.url, 2, timeout)
        runners_warm, runners = runner_records(theirs.url, 2, timeout, tmp_path)
    assert ours.requests == theirs.requests and ours.connection_ids == theirs.connection_ids
    loose = case == "dropped mid-body"
    same_figures(warm, runners_warm, error_prefix=loose)
    for mine, runners_record in zip(records, runners, strict=True):
        same_figures(mine, runners_record, error_prefix=loose)


def test_an_unreachable_server_is_the_same_line_and_the_rest_are_skipped_on_both_transports(tmp_path, dead_url):
    warm, records = kit_records(dead_url, 3, 5.0)
    runners_warm, runners = runner_records(dead_url, 3, 5.0, tmp_path)
    same_figures(warm, runners_warm)
    for mine, runners_record in zip(records, runners, strict=True):
        same_figures(mine, runners_record)
    assert records[0]["error"].startswith("unreachable: ")
    assert records[2]["error"].startswith("skipped after run 1: unreachable")


# --- the whole path, against moto in server mode ----------------------------------------------


def server_output(name: str, kind: str, region: str, port: int, instance_type: str, kit_key: str) -> dict:
    return {
        "contract": 2,
        "name": name,
        "kind": kind,
        "region": region,
        "instance_type": instance_type,
        "auto_scaling_group": f"inference-{name}",
        "zones": [f"{region}a"],
        "port": port,
        "health_path": "/health",
        "model_id": "fake-model",
        "readiness_parameter": f"/inference/{name}/ready",
        "log_group": f"/inference/{name}",
        "evidence_bucket": EVIDENCE_BUCKET.format(region=region),
        "evidence_prefix": f"in-region/{name}/",
        "bench_kit": f"s3://{ACCOUNT_BUCKET.format(region=region)}/{kit_key}",
    }


def deploy(tmp_path: Path, servers: dict[str, tuple[str, str, int, str]], ready: dict[str, str]) -> Path:
    """What a deploy leaves: the kit asset and the evidence bucket per region, each server's
    readiness, and the outputs file."""
    zipped = kit_zip(tmp_path / "kit.zip")
    stacks: dict[str, dict[str, str]] = {}
    for name, (kind, region, port, instance_type) in servers.items():
        s3 = boto3.client("s3", region_name=region)
        location = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
        for bucket in (ACCOUNT_BUCKET.format(region=region), EVIDENCE_BUCKET.format(region=region)):
            if bucket not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
                s3.create_bucket(Bucket=bucket, **location)
        s3.upload_file(str(zipped), ACCOUNT_BUCKET.format(region=region), "0123abcd.zip")
        value = {"state": ready.get(name, "ready"), "instance_id": INSTANCE[name], "zone": f"{region}a"}
        boto3.client("ssm", region_name=region).put_parameter(
            Name=f"/inference/{name}/ready", Type="String", Value=json.dumps(value), Overwrite=True
        )
        stack = "InferenceGpuStack" if kind == "ec2-vllm" else "InferenceNeuronStack"
        key = "Backend" + name.capitalize()
        stacks.setdefault(stack, {})[key] = json.dumps(
            server_output(name, kind, region, port, instance_type, "0123abcd.zip")
        )
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps(stacks))
    return outputs


def run_bench(tmp_path: Path, outputs: Path, *extra: str) -> tuple[int, dict]:
    argv = ["--aws", "--local", "never", "--outputs-file", str(outputs), "--results-dir", str(tmp_path / "r")]
    code = bench.run([*argv, "--timeout", "5", "--in-region", *extra])
    (path,) = (tmp_path / "r").glob("*/bench-*.json")
    return code, load(path)


def check_against_the_document(command: dict[str, Any]) -> None:
    """SendCommand as AWS takes it for AWS-RunShellScript."""
    assert command["DocumentName"] == "AWS-RunShellScript"
    parameters = command["Parameters"]
    assert set(parameters) <= set(RUN_SHELL_SCRIPT_PARAMETERS) and "commands" in parameters
    for name, values in parameters.items():
        declared = RUN_SHELL_SCRIPT_PARAMETERS[name]
        assert isinstance(values, list) and all(isinstance(v, str) for v in values), name
        if declared["type"] == "String":
            assert len(values) == 1, name
        else:
            assert len(values) >= declared["minItems"], name
        if "allowedPattern" in declared:
            assert re.fullmatch(declared["allowedPattern"], values[0]), (name, values)
    assert 30 <= command["TimeoutSeconds"] <= 2592000
    assert len(command["Comment"]) <= 100


def test_each_server_gets_a_row_on_its_own_host_beside_its_tunnel_row(instances, tmp_path, dead_url, capsys):
    with FakeOpenAI([text(OCEAN)]) as g6, FakeOpenAI([text(OCEAN)]) as inf2:
        servers = {
            "g6": ("ec2-vllm", "us-east-1", g6.httpd.server_address[1], "g6.xlarge"),
            "g5g": ("ec2-vllm", "us-east-1", 8000, "g5g.2xlarge"),
            "inf2": ("ec2-neuron", "us-east-2", inf2.httpd.server_address[1], "inf2.xlarge"),
        }
        outputs = deploy(tmp_path, servers, ready={"g5g": "booting"})
        dead_port = dead_url.rsplit(":", 1)[1]
        code, evidence = run_bench(
            tmp_path,
            outputs,
            "--repeats",
            "2",
            "--backends",
            "g6,g5g,inf2",
            "--forward",
            f"g6={servers['g6'][2]}",
            "--forward",
            f"inf2={servers['inf2'][2]}",
            "--forward",
            f"g5g={dead_port}",
        )
    assert code == 0, [r.stderr for r in instances.runs]

    # One command per ready server, in its own region, to the instance its readiness names.
    for name, region in (("g6", "us-east-1"), ("inf2", "us-east-2")):
        (command,) = boto3.client("ssm", region_name=region).list_commands()["Commands"]
        check_against_the_document(command)
        assert command["InstanceIds"] == [INSTANCE[name]]
        assert int(command["Parameters"]["executionTimeout"][0]) == in_region.execution_timeout_s(2, 5.0)
        script = "\n".join(command["Parameters"]["commands"])
        assert f"s3://{ACCOUNT_BUCKET.format(region=region)}/0123abcd.zip" in script
        assert f"s3://{EVIDENCE_BUCKET.format(region=region)}/in-region/{name}/" in script
    assert len(instances.runs) == 2 and all(r.returncode == 0 for r in instances.runs)
    # The kit sent exactly the tunnel row's warm-up and bodies, against the server's own port.
    for server in (g6, inf2):
        assert len(server.requests) == 6 and server.requests[:3] == server.requests[3:]

    names = [b["name"] for b in evidence["backends"]]
    assert names == ["g6", "g6@host", "g5g", "inf2", "inf2@host"]
    by_row: dict[str, list[dict]] = {}
    for record in evidence["records"]:
        by_row.setdefault(record["backend"], []).append(record)
    shape = set(RequestRecord(backend="x", run=1).to_json()) | {"path"}
    for name in ("g6", "inf2"):
        tunnel, host = by_row[name], by_row[f"{name}@host"]
        assert [r["path"] for r in tunnel] == ["tunnel"] * 2 and [r["path"] for r in host] == ["in-region"] * 2
        for record in tunnel + host:
            assert set(record) == shape
            assert record["ok"] and record["output_tokens"] == 13 and record["ttft_s"] > 0
            assert record["e2e_s"] >= record["ttft_s"] and record["tokens_per_s"] > 0
        assert [r["run"] for r in host] == [1, 2]
    assert {w["backend"] for w in evidence["warm_up"]} >= {"g6@host", "inf2@host"}
    assert all(r.get("path") == "tunnel" for r in by_row["g5g"])  # measured (unreachable), never sent

    runs = {r["backend"]: r for r in evidence["in_region"]}
    assert set(runs) == {"g6", "inf2"}
    assert runs["g6"]["status"] == "Success" and runs["g6"]["host"]["vcpus"] == os.cpu_count()
    assert runs["g6"]["evidence"].startswith(f"s3://{EVIDENCE_BUCKET.format(region='us-east-1')}/in-region/g6/")
    assert runs["g6"]["evidence_deleted_after_read"] is True
    line = "g5g: not run in the region: its server is booting"
    assert line in evidence["notices"] and capsys.readouterr().err.count(line) == 1
    # Read back, then removed: the bucket is empty again, so cdk destroy can delete it.
    for region in ("us-east-1", "us-east-2"):
        listed = boto3.client("s3", region_name=region).list_objects_v2(Bucket=EVIDENCE_BUCKET.format(region=region))
        assert listed.get("KeyCount", 0) == 0

    table = bench_tables.bench_table(BenchFile.from_json(evidence))
    rows = dict(zip(table.columns[0]._cells, table.columns[-1]._cells, strict=True))
    assert rows["g6"].startswith("through the SSM tunnel from this machine")
    assert rows["g6@host"].startswith(
        f"on the server's own host (g6.xlarge, {os.cpu_count()} vCPUs): the client shares the server's CPUs; "
        "no network path; the client used "
    )
    assert rows["inf2@host"].startswith("on the server's own host (inf2.xlarge, ")
    assert table.columns[2]._cells[names.index("g6@host")] == "2/2"


def test_load_levels_run_on_the_servers_own_host_as_they_run_through_the_tunnel(instances, tmp_path):
    with FakeOpenAI([text(OCEAN, first_token_delay_s=0.1)]) as g6:
        port = g6.httpd.server_address[1]
        outputs = deploy(tmp_path, {"g6": ("ec2-vllm", "us-east-1", port, "g6.xlarge")}, ready={})
        code, evidence = run_bench(
            tmp_path, outputs, "--concurrency", "1,2", "--requests", "4", "--backends", "g6", "--forward", f"g6={port}"
        )
    assert code == 0, [r.stderr for r in instances.runs]
    (command,) = boto3.client("ssm", region_name="us-east-1").list_commands()["Commands"]
    # Every request and warm-up of both levels at its timeout: 4 + 1 and 4 + 2.
    assert int(command["Parameters"]["executionTimeout"][0]) == in_region.execution_timeout_s(11, 5.0)
    assert g6.max_in_flight == 2
    by_level: dict[tuple[str, str], list[dict]] = {}
    for record in evidence["records"]:
        by_level.setdefault((record["backend"], record["level"]["label"]), []).append(record)
    for row in ("g6", "g6@host"):
        for label in ("1 at a time", "2 at a time"):
            records = by_level[(row, label)]
            assert sorted(r["run"] for r in records) == [1, 2, 3, 4] and all(r["ok"] for r in records), (row, label)
    assert all(r["path"] == "in-region" for r in by_level[("g6@host", "2 at a time")])
    # A warm-up per connection each level keeps in flight, on the host as through the tunnel.
    host_warm = [w["level"]["label"] for w in evidence["warm_up"] if w["backend"] == "g6@host"]
    assert sorted(host_warm) == ["1 at a time", "2 at a time", "2 at a time"]


def test_a_command_that_fails_on_the_instance_is_its_status_and_its_last_lines(instances, tmp_path, capsys):
    with FakeOpenAI([text(OCEAN)]) as g6:
        port = g6.httpd.server_address[1]
        outputs = deploy(tmp_path, {"g6": ("ec2-vllm", "us-east-1", port, "g6.xlarge")}, ready={})
        boto3.client("s3", region_name="us-east-1").delete_object(
            Bucket=ACCOUNT_BUCKET.format(region="us-east-1"), Key="0123abcd.zip"
        )  # the kit is not there: the command's first step fails
        code, evidence = run_bench(tmp_path, outputs, "--repeats", "2", "--backends", "g6", "--forward", f"g6={port}")
    assert code == 0  # the tunnel row measured
    (run,) = evidence["in_region"]
    assert (run["status"], run["response_code"]) == ("Failed", 1)
    problem = run["problem"]
    assert problem.startswith(f"g6: the in-region command Failed (exit 1) on {INSTANCE['g6']}: ")
    assert "404" in problem and "\n" not in problem
    assert capsys.readouterr().err.count("the in-region command Failed") == 1
    host = [r for r in evidence["records"] if r["backend"] == "g6@host"]
    assert [(r["ok"], r["error"], r["path"]) for r in host] == [(False, problem, "in-region")] * 2


SAGEMAKER_OUTPUT = {
    "contract": 2,
    "name": "sagemaker",
    "kind": "sagemaker",
    "region": "us-east-2",
    "model_id": "fake-model",
    "port": 8080,
    "health_path": "/ping",
    "endpoint_name": "inference-sagemaker",
}


def test_in_region_for_backends_without_an_instance_is_one_line_before_anything_is_measured(
    tmp_path, monkeypatch, dead_url
):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_ENDPOINT_URL", dead_url)  # nothing may be called
    outputs = tmp_path / "outputs.json"
    outputs.write_text(json.dumps({"InferenceSageMakerStack": {"BackendSagemaker": json.dumps(SAGEMAKER_OUTPUT)}}))
    base = ["--local", "never", "--results-dir", str(tmp_path / "r"), "--in-region"]
    with pytest.raises(RunnerError) as sagemaker:
        bench.run([*base, "--aws", "--outputs-file", str(outputs), "--backends", "sagemaker"])
    assert str(sagemaker.value).startswith("--in-region: sagemaker: not run in the region: a SageMaker endpoint has no")
    with pytest.raises(RunnerError, match="an --endpoint server is not an instance of this app's"):
        bench.run([*base, "--aws", "--endpoint", f"mine={dead_url}"])
    with pytest.raises(RunnerError, match="needs AWS: configure credentials or pass --aws"):
        bench.run([*base, "--no-aws", "--endpoint", f"mine={dead_url}"])
    with pytest.raises(RunnerError, match=r"one prompt .* it does not take --prompts"):
        bench.run([*base, "--no-aws", "--concurrency", "4", "--prompts", str(tmp_path / "prompts.jsonl")])
    for error in (sagemaker.value,):
        assert "\n" not in str(error)
    assert not list((tmp_path / "r").glob("*/bench-*.json"))


@pytest.mark.parametrize(
    ("kind", "source", "words"),
    [
        (BackendKind.BEDROCK, "catalog", "Bedrock is a regional API with no host of ours"),
        (BackendKind.SAGEMAKER_SERVERLESS, "stack output", "a SageMaker endpoint has no shell"),
        (BackendKind.LOCAL, "embedded", "the embedded model runs on this machine"),
        (BackendKind.EC2_VLLM, "stack output, --endpoint", "an --endpoint server is not an instance"),
    ],
)
def test_what_in_the_region_can_and_cannot_mean_per_kind(kind, source, words):
    backend = Backend(name="b", kind=kind, title="b", model_id="m", source=source, region="us-east-2")
    line = in_region.no_instance_reason(backend)
    assert line.startswith("b: not run in the region: ") and words in line and "\n" not in line


def test_a_server_deployed_before_the_kit_is_told_to_redeploy():
    from catalog.contract import BackendOutput

    data = server_output("g6", "ec2-vllm", "us-east-1", 8000, "g6.xlarge", "k.zip")
    for key in ("evidence_bucket", "evidence_prefix", "bench_kit"):
        data.pop(key)
    output = BackendOutput.parse("BackendG6", data)
    backend = Backend(name="g6", kind=BackendKind.EC2_VLLM, title="g6", model_id="m", source="stack output")
    backend.output = output
    assert in_region.no_instance_reason(backend).endswith("redeploy its stack (python -m runner.up)")


class StubSsm:
    """Just enough of SSM for Ctrl-C: a ready server, a command sent, then the wait interrupted."""

    def __init__(self) -> None:
        self.cancelled: list[dict[str, Any]] = []

    def get_parameter(self, Name):
        return {"Parameter": {"Value": json.dumps({"state": "ready", "instance_id": INSTANCE["g6"]})}}

    def send_command(self, **request):
        return {"Command": {"CommandId": "c-1"}}

    def get_command_invocation(self, **request):
        raise KeyboardInterrupt

    def cancel_command(self, **request):
        self.cancelled.append(request)


def test_ctrl_c_cancels_the_commands_still_running(monkeypatch):
    from catalog.contract import BackendOutput

    ssm = StubSsm()
    monkeypatch.setattr(in_region, "boto_client", lambda service, region, timeout: ssm)
    output = BackendOutput.parse("BackendG6", server_output("g6", "ec2-vllm", "us-east-1", 8000, "g6.xlarge", "k"))
    backend = Backend(name="g6", kind=BackendKind.EC2_VLLM, title="g6", model_id="m", source="stack output")
    backend.output = output
    with pytest.raises(KeyboardInterrupt):
        in_region.run_in_region([backend], {}, repeats=1, timeout_s=5.0, poll_s=0)
    assert ssm.cancelled == [{"CommandId": "c-1", "InstanceIds": [INSTANCE["g6"]]}]
