"""`runner.bench --in-region` on a workload: the requests the tunnel row's run builds (lengths on the
server's tokenizer, forced output, conversations) sent by the in-region kit from the server's own
host, graded on the same objectives, with the server's own metrics read on the host.

The kit sends the bodies the runner built (it has no tokenizer count, no workload of its own):
held against the runner's own requests through the same load engine on the same scripted
server, the kit run as shipped (the same bodies, conversations rebuilt from them, the same
records); the whole path runs against moto in server mode with the real AWS CLI
(tests/runner/in_region_host.py's `instances` fixture: Run Command's commands run under `sh` here), and a
server whose costs the test sets (tests/runner/known_server.py), so each figure is computed in
the test beforehand.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from statistics import median

import boto3
import pytest

from catalog import BackendKind
from runner import bench
from runner.core.backends import Backend
from runner.core.errors import RunnerError
from runner.core.records import RequestRecord, records_of
from runner.figures.levels import level_groups, level_summary
from runner.measure.host_rows import accelerator_within, server_metrics_of
from runner.measure.load import LoadLevel, run_level_async
from runner.measure.openai_async import AsyncOpenAIStreamClient, warm_up_async
from runner.measure.records import ChatRequest, Conversation
from runner.measure.server_metrics import metric_names
from runner.measure.workload_in_region import unit_json
from tests.runner.fake_openai import FakeOpenAI, text
from tests.runner.in_region_host import kit_zip
from tests.runner.known_server import Running, known, known_server
from tests.runner.test_in_region import (
    ACCOUNT_BUCKET,
    COMPARED,
    EVIDENCE_BUCKET,
    KIT,
    OCEAN,
    deploy,
    kit_config,
    kit_result,
    run_bench,
    run_kit,
)

BACKEND = Backend(name="x", kind=BackendKind.OPENAI, title="x", model_id="fake-model", source="test")
STAMPED = ("target_input_tokens", "target_output_tokens", "forced_length", "session", "turn")


def workload_units() -> list[ChatRequest | Conversation]:
    """A forced-length request and a two-turn conversation, as BackendRun builds them."""
    return [
        ChatRequest("one two three", max_tokens=8, usage_per_chunk=True, force_length=True, target_input_tokens=9),
        Conversation(("first turn", "second turn"), 6, True, 7, usage_per_chunk=True),
    ]


async def runner_level(url: str, level: LoadLevel, units: list) -> list[dict]:
    """What the tunnel row's load engine sends and records (workload_run.py openai_level)."""
    backend = Backend(name="x", kind=BackendKind.OPENAI, title="x", model_id="fake-model", source="t", base_url=url)
    async with AsyncOpenAIStreamClient(url, "fake-model", timeout_s=5.0, connections=level.in_flight) as client:
        await asyncio.gather(*(warm_up_async(client, "x") for _ in range(level.in_flight)))
        records = await run_level_async(client.chat, backend.explain, "x", level, units, seed=3)
    return [r.to_json() for r in records]


def by_place(records: list[dict]) -> list[dict]:
    return sorted(records, key=lambda r: (r["run"], r["turn"] or 0))


def requests_file(tmp_path: Path, levels: list[list]) -> Path:
    """A workload's requests as the runner puts them beside the run (gzipped JSON, one list a level)."""
    path = tmp_path / "requests.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"levels": levels}).encode()))
    return path


def test_the_kit_sends_a_workloads_bodies_and_conversations_as_the_load_engine_does(kit, tmp_path):
    level = LoadLevel("concurrency", 2, 4)
    units = workload_units()
    with FakeOpenAI([text(OCEAN, first_token_delay_s=0.02)]) as ours, FakeOpenAI([text(OCEAN)]) as theirs:
        bodies = requests_file(tmp_path, [[unit_json(u, "fake-model") for u in units]])
        config = kit_config(ours.url, 1, seed=3, levels=[level.to_json()])
        result = kit_result(kit, config, tmp_path, "--requests", str(bodies))
        runners = asyncio.run(runner_level(f"{theirs.url}/v1", level, units))
    # The same bodies: forced lengths, usage per chunk, each second turn after the first's answer.
    assert sorted(map(json.dumps, ours.requests)) == sorted(map(json.dumps, theirs.requests))
    second_turns = [r for r in ours.requests if r["messages"][-1]["content"] == "second turn"]
    assert len(second_turns) == 2 and all(
        [m["role"] for m in r["messages"]] == ["user", "assistant", "user"] and r["messages"][1]["content"]
        for r in second_turns
    )
    assert all(r.get("ignore_eos") is True for r in ours.requests[2:])  # the warm-ups are not forced
    assert "server_metrics" not in result and len(result["warm_ups"]) == 2
    # The same records: request 1 and 3 alone, requests 2 and 4 two turns each.
    records = [RequestRecord.from_json(r, "kit").to_json() for r in result["records"]]
    assert [(r["run"], r["turn"]) for r in by_place(records)] == [(1, None), (2, 1), (2, 2), (3, None), (4, 1), (4, 2)]
    for mine, theirs_record in zip(by_place(records), by_place(runners), strict=True):
        assert {k: mine[k] for k in (*COMPARED, *STAMPED)} == {k: theirs_record[k] for k in (*COMPARED, *STAMPED)}
        assert mine["ok"] and mine["ttft_s"] >= 0.02


def test_the_kit_reads_the_servers_metrics_on_the_host_as_the_tunnel_rows_sampler_reads_them(kit, tmp_path):
    """One request at a time on the server, two sent at once: the host's reading shows the queue,
    and the prefix cache's queries grow by exactly the prompt tokens the level sent."""
    level = LoadLevel("concurrency", 2, 4)
    units = [ChatRequest(f"request {i} of the level", max_tokens=20, force_length=True) for i in range(4)]
    with known_server(ttft=0.02, rate=100.0, tokens=500, max_running=1) as server:
        settings = {"url": f"{server.url}/metrics", "names": metric_names(), "every_s": 0.1}
        config = kit_config(server.url, 1, metrics=settings, levels=[level.to_json()])
        bodies = requests_file(tmp_path, [[unit_json(u, known.MODEL) for u in units]])
        result = kit_result(kit, config, tmp_path, "--requests", str(bodies))
    (metrics,) = result["server_metrics"]
    records, warm_ups = result["records"], result["warm_ups"]
    summary = server_metrics_of(metrics)
    assert all(r["ok"] and r["output_tokens"] == 20 for r in records)
    assert summary.samples == len(metrics["samples"]) >= 4 and "problem" not in summary.to_json()
    assert summary.running_max == 1 and summary.waiting_max >= 1 and summary.queueing is True
    sent = sum(r["prompt_tokens"] for r in records) + sum(w["prompt_tokens"] for w in warm_ups)
    assert summary.prefix_cache_queries_delta == sent
    # Only the figures the runner reads travel back (the lines it names), nothing else of the page.
    assert all(line.startswith(tuple(metric_names())) for _, text in metrics["samples"] for line in text.splitlines())


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("not json", "not a JSON file"),
        ('{"levels": []}', "needs one list of requests per level of the config"),
        ('{"levels": [[{"body": {"messages": "hi", "stream": true}}]]}', "a request is {body: a streamed chat body"),
        ('{"levels": [[{"conversation": []}]]}', "a request is {body: a streamed chat body"),
    ],
)
def test_a_requests_file_the_kit_cannot_send_is_refused_in_one_line(kit, tmp_path, content, words):
    requests = tmp_path / "requests.json"
    requests.write_text(content)
    config = kit_config("http://127.0.0.1:9", 1, levels=[LoadLevel("concurrency", 1, 2).to_json()])
    done = run_kit(kit, config, tmp_path / "out.json", "--requests", str(requests))
    assert done.returncode == 2 and not (tmp_path / "out.json").exists()
    assert done.stderr.startswith("bench kit: --requests ") and words in done.stderr and done.stderr.count("\n") == 1


# --- the whole path -------------------------------------------------------------------------


@dataclass
class G6:
    server: Running
    bench: Callable[..., tuple[int, dict]]


@contextmanager
def g6_on(tmp_path: Path, ready: str = "ready", **settings) -> Iterator[G6]:
    """A known server as the g6 of a deployed stack (its kit, evidence bucket and readiness), and
    `runner.bench --in-region` against it, measured through its forward."""
    with known_server(**settings) as server:
        port = int(server.url.rsplit(":", 1)[1])
        outputs = deploy(tmp_path, {"g6": ("ec2-vllm", "us-east-1", port, "g6.xlarge")}, ready={"g6": ready})
        yield G6(
            server, lambda *argv: run_bench(tmp_path, outputs, *argv, "--backends", "g6", "--forward", f"g6={port}")
        )


BASE_TTFT, PREFILL = 0.05, 2000.0


def summaries(evidence: dict) -> dict[tuple[str, str], dict]:
    slo = evidence["config"].get("slo")
    return {key: level_summary(records, slo).to_json() for key, records in level_groups(records_of(evidence)).items()}


def test_a_workload_sweep_runs_on_the_servers_own_host_graded_on_the_same_objectives(instances, tmp_path):
    """TTFT = 50 ms + prompt tokens / 2,000: about 100 ms at 100 tokens, 200 ms at 300; an
    objective of 150 ms meets the first and misses the second, on both rows."""
    with g6_on(tmp_path, ttft=BASE_TTFT, rate=100.0, tokens=500, prefill_rate=PREFILL, prefix_cache=True) as g6:
        code, evidence = g6.bench(
            "--input-tokens", "100,300", "--output-tokens", "8", "--repeats", "3",
            "--goodput", "ttft:150",
        )  # fmt: skip
        seen = list(g6.server.server.seen)
    assert code == 0, [r.stderr for r in instances.runs]
    # One command per input length, each fetching its request bodies from the run's folder.
    commands = boto3.client("ssm", region_name="us-east-1").list_commands()["Commands"]
    assert len(commands) == 2 and all(r.returncode == 0 for r in instances.runs)
    for command in commands:
        script = "\n".join(command["Parameters"]["commands"])
        assert f"s3://{EVIDENCE_BUCKET.format(region='us-east-1')}/in-region/g6/" in script
        assert '--requests "$work/requests.json.gz"' in script
    # Every prompt sent was new: the host row is not served from the tunnel row's prefix cache.
    timed = [words for words in seen if len(words) > 5]
    assert len(timed) == 12 and len({tuple(w) for w in timed}) == 12

    assert [b["name"] for b in evidence["backends"]] == ["g6", "g6@host"]
    figures = summaries(evidence)
    for row, path in (("g6", "tunnel"), ("g6@host", "in-region")):
        for length, met in ((100, 1.0), (300, 0.0)):
            records = [r for r in evidence["records"] if r["backend"] == row and r["target_input_tokens"] == length]
            assert len(records) == 3 and all(r["path"] == path and r["ok"] for r in records), (row, length)
            assert all(r["prompt_tokens"] == length and r["output_tokens"] == 8 and r["forced_length"] for r in records)
            summary = figures[(row, f"{length} in, 1 at a time")]
            assert summary["goodput"]["share_met"] == met, (row, length)
            expected = BASE_TTFT + length / PREFILL
            assert summary["ttft_s"]["median"] == pytest.approx(expected, rel=0.15), (row, length)
    # The host's readings kept beside each of its levels: the server's metrics read on the host.
    host_levels = [m for m in evidence["levels"] if m["backend"] == "g6@host"]
    assert [m["label"] for m in host_levels] == ["100 in, 1 at a time", "300 in, 1 at a time"]
    for meta in host_levels:
        records = [r for r in evidence["records"] if r["backend"] == "g6@host" and r["level"]["label"] == meta["label"]]
        warm = [w for w in evidence["warm_up"] if w["backend"] == "g6@host" and w["level"]["label"] == meta["label"]]
        sent = sum(r["prompt_tokens"] for r in records + warm)
        assert meta["server_metrics"]["prefix_cache_queries_delta"] == sent
        assert meta["accelerator"]["problem"] == "no nvidia-smi or neuron-monitor on the host"
    assert evidence["workload_backends"]["g6@host"]["path"] == "in-region"
    assert [r["evidence_deleted_after_read"] for r in evidence["in_region"]] == [True, True]
    listed = boto3.client("s3", region_name="us-east-1").list_objects_v2(
        Bucket=EVIDENCE_BUCKET.format(region="us-east-1")
    )
    assert listed.get("KeyCount", 0) == 0
    assert median(r["ttft_s"] for r in evidence["records"] if r["backend"] == "g6@host") > BASE_TTFT


def test_the_capacity_search_runs_on_the_host_one_command_a_step(instances, tmp_path):
    """Each other decoding stream stretches a token's gap by half: TPOT 10, 15, 20, 25 ms at 1..4
    streams, so within 22.5 ms the capacity is 3 on the host as through the tunnel."""
    slowdown, tpot_limit = 0.5, 22.5
    expected = max(c for c in range(1, 20) if 10 * (1 + slowdown * (c - 1)) <= tpot_limit)
    with g6_on(tmp_path, ttft=0.02, rate=100.0, tokens=500, prefill_rate=10_000.0, slowdown=slowdown) as g6:
        code, evidence = g6.bench(
            "--input-tokens", "50", "--output-tokens", "12", "--goodput", f"tpot:{tpot_limit}",
            "--find-capacity", "--requests", "4",
        )  # fmt: skip
    assert code == 0, [r.stderr for r in instances.runs]
    searches = {s["backend"]: s for s in evidence["capacity"]}
    assert searches["g6"]["capacity"] == searches["g6@host"]["capacity"] == expected == 3
    tried = [(t["value"], t["met"]) for t in searches["g6@host"]["tried"]]
    assert tried == [(1, True), (2, True), (4, False), (3, True)]
    # One Run Command a step: each depends on the one before.
    assert len(boto3.client("ssm", region_name="us-east-1").list_commands()["Commands"]) == len(tried)
    figures = summaries(evidence)
    for value, _ in tried:
        tpot = figures[("g6@host", f"50 in, {value} at a time")]["tpot_s"]["median"] * 1000
        assert tpot == pytest.approx(10 * (1 + slowdown * (value - 1)), rel=0.1), value


def test_a_server_that_is_not_ready_gets_no_host_row_and_the_workload_goes_on(instances, tmp_path, capsys):
    with g6_on(tmp_path, ttft=0.02, rate=200.0, tokens=500, ready="booting") as g6:
        code, evidence = g6.bench("--input-tokens", "40", "--output-tokens", "4", "--repeats", "2")
    assert code == 0
    assert [b["name"] for b in evidence["backends"]] == ["g6"]
    assert [r["ok"] for r in evidence["records"]] == [True, True]
    line = "g6: not run in the region: its server is booting"
    assert line in evidence["notices"] and capsys.readouterr().err.count(line) == 1
    assert "g6@host" not in evidence["workload_backends"]


def test_a_command_that_fails_on_the_host_fails_the_host_rows_levels_only(instances, tmp_path):
    with g6_on(tmp_path, ttft=0.02, rate=200.0, tokens=500) as g6:
        boto3.client("s3", region_name="us-east-1").delete_object(
            Bucket=ACCOUNT_BUCKET.format(region="us-east-1"), Key="0123abcd.zip"
        )  # the kit is not there: the command's first step fails
        code, evidence = g6.bench(
            "--input-tokens", "40,80", "--output-tokens", "4", "--repeats", "2",
        )  # fmt: skip
    assert code == 0  # the tunnel row measured
    host = [r for r in evidence["records"] if r["backend"] == "g6@host"]
    assert len(host) == 4 and not any(r["ok"] for r in host)
    assert all(r["error"].startswith("the in-region command Failed (exit 1)") for r in host)
    assert all(r["ok"] for r in evidence["records"] if r["backend"] == "g6")
    # Its request bodies did not stay behind in the bucket.
    listed = boto3.client("s3", region_name="us-east-1").list_objects_v2(
        Bucket=EVIDENCE_BUCKET.format(region="us-east-1")
    )
    assert listed.get("KeyCount", 0) == 0


def test_the_accelerators_readings_are_cut_to_the_level_they_were_read_in():
    from runner.core.readings import AcceleratorReadings
    from runner.render.bench import server_cell

    accelerator = {
        "tool": "nvidia-smi",
        "problem": None,
        "samples": [[0.1, 10.0, 1000.0], [0.6, 40.0, 2000.0], [0.9, 60.0, 3000.0], [1.4, 90.0, 4000.0]],
    }
    level = accelerator_within(accelerator, [0.5, 1.0])
    assert level.samples == [[0.6, 40.0, 2000.0], [0.9, 60.0, 3000.0]]
    assert (level.utilization_pct_mean, level.utilization_pct_max, level.memory_used_mib_max) == (50, 60, 3000)
    assert server_cell(None, level) == "GPU 50% mean"
    idle = accelerator_within(accelerator, [2.0, 3.0])
    assert idle.problem == "no reading while this level ran" and server_cell(None, idle) == "-"
    # A host without a tool keeps the kit's own line for every level.
    none = {"tool": None, "problem": "no nvidia-smi or neuron-monitor on the host", "samples": []}
    assert accelerator_within(none, [0.0, 1.0]) == AcceleratorReadings(None, none["problem"])


def test_agent_traffic_is_not_run_from_a_servers_host_and_says_why(tmp_path):
    with pytest.raises(RunnerError) as refused:
        bench.run(
            ["--workload", "agent", "--in-region", "--no-aws", "--local", "never", "--results-dir", str(tmp_path)]
        )
    assert str(refused.value).startswith("--workload agent runs the Strands agent on this machine")
    assert "\n" not in str(refused.value) and not list(tmp_path.glob("*/bench-*.json"))


def test_a_kit_deployed_before_workloads_in_the_region_is_told_to_redeploy(instances, tmp_path):
    """A stack deployed by an earlier version ships a kit without --requests: argparse refuses it
    on the host, and the line says what to do."""
    old = (KIT / "__main__.py").read_text()
    old = old.replace(
        '    parser.add_argument("--requests", help="a workload\'s requests per level (JSON), as the runner built them")\n',
        "",
    )
    assert "--requests" in old and 'add_argument("--requests"' not in old
    with g6_on(tmp_path, ttft=0.02, rate=200.0, tokens=500) as g6:
        boto3.client("s3", region_name="us-east-1").upload_file(
            str(kit_zip(tmp_path / "old-kit.zip", main=old)), ACCOUNT_BUCKET.format(region="us-east-1"), "0123abcd.zip"
        )
        code, evidence = g6.bench(
            "--input-tokens", "40", "--output-tokens", "4", "--repeats", "2",
        )  # fmt: skip
    assert code == 0
    host = [r for r in evidence["records"] if r["backend"] == "g6@host"]
    assert len(host) == 2 and not any(r["ok"] for r in host)
    error = host[0]["error"]
    assert "unrecognized arguments: --requests" in error and error.endswith(
        "the stack's bench kit is older than this runner: redeploy its stack (python -m runner.up)"
    )


def test_a_datasets_prompts_are_taken_on_from_where_the_tunnel_row_stopped(instances, tmp_path):
    """Five prompts, three requests a row: the tunnel row sends the first three, the host row the
    fourth, the fifth and then the first again (the dataset comes round only once it is spent),
    and the bodies go once each."""
    prompts = [f"prompt number {n} of the users own file" for n in range(1, 6)]
    dataset = tmp_path / "prompts.jsonl"
    dataset.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts))
    with g6_on(tmp_path, ttft=0.02, rate=200.0, tokens=500, prefix_cache=True) as g6:
        code, evidence = g6.bench(
            "--dataset", str(dataset), "--output-tokens", "4", "--repeats", "3",
        )  # fmt: skip
        sent = [" ".join(words) for words in g6.server.server.seen if len(words) > 1]
    assert code == 0, [r.stderr for r in instances.runs]
    assert sent == [prompts[0], prompts[1], prompts[2], prompts[3], prompts[4], prompts[0]]
    host = [r for r in evidence["records"] if r["backend"] == "g6@host"]
    assert [r["ok"] for r in host] == [True] * 3 and all(r["output_tokens"] == 4 for r in host)


def test_nothing_of_a_run_stays_in_the_bucket_when_its_command_cannot_be_sent(instances, tmp_path, monkeypatch):
    from botocore.exceptions import ClientError

    from runner.cloud.reach import in_region

    def refused(run, ssm, execution_timeout):
        raise ClientError(
            {"Error": {"Code": "InvalidInstanceId", "Message": "Instances not in a valid state"}}, "SendCommand"
        )

    monkeypatch.setattr(in_region, "send", refused)
    with g6_on(tmp_path, ttft=0.02, rate=200.0, tokens=500) as g6:
        code, evidence = g6.bench(
            "--input-tokens", "40", "--output-tokens", "4", "--repeats", "2",
        )  # fmt: skip
    assert code == 0 and [b["name"] for b in evidence["backends"]] == ["g6"]
    (line,) = [n for n in evidence["notices"] if n.startswith("g6: not run in the region")]
    assert "InvalidInstanceId" in line
    listed = boto3.client("s3", region_name="us-east-1").list_objects_v2(
        Bucket=EVIDENCE_BUCKET.format(region="us-east-1")
    )
    assert listed.get("KeyCount", 0) == 0  # the uploaded bodies went too


def test_a_role_that_cannot_read_the_requests_is_told_to_redeploy(instances, tmp_path, monkeypatch):
    """A stack from before workloads in the region: its instance role has no s3:GetObject on the
    run's requests. moto does not enforce IAM, so the refusal is a bucket policy that denies the
    read (moto applies a bucket policy's Deny to every caller): the upload goes through, and the
    instance's `aws s3 cp` of the requests is refused AccessDenied, as the role's would be."""
    from runner.cloud.reach import in_region

    uploaded = in_region.upload_requests

    def upload_then_deny_reading(run, s3):
        uploaded(run, s3)
        bucket = run.output.evidence_bucket
        deny = {
            "Effect": "Deny",
            "Principal": "*",
            "Action": "s3:GetObject",
            "Resource": f"arn:aws:s3:::{bucket}/{run.run_prefix}{in_region.REQUESTS_FILE}",
        }
        s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [deny]}))

    monkeypatch.setattr(in_region, "upload_requests", upload_then_deny_reading)
    with g6_on(tmp_path, ttft=0.02, rate=200.0, tokens=500) as g6:
        code, evidence = g6.bench(
            "--input-tokens", "40", "--output-tokens", "4", "--repeats", "2",
        )  # fmt: skip
    assert code == 0
    (run,) = evidence["in_region"]
    assert (run["status"], run["response_code"]) == ("Failed", in_region.NO_REQUESTS_EXIT)
    error = next(r["error"] for r in evidence["records"] if r["backend"] == "g6@host")
    assert in_region.NO_REQUESTS in error
    assert error.endswith(
        "the instance role may predate workloads in the region: redeploy its stack (python -m runner.up)"
    )
