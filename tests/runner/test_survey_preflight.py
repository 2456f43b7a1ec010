"""`runner.survey --dry-run`, the preflight: STS on moto, Service Quotas on a loopback fake with
the real API's shapes (moto has none for ec2 or sagemaker: tests/runner/fake_service_quotas.py),
offerings and prices from the catalog's offline tables. Nothing is deployed."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from catalog.config import PLACEMENT_ENV
from runner import survey
from tests.runner.fake_service_quotas import FakeServiceQuotas

G = ("L-DB2E81BA", "Running On-Demand G and VT instances")
INF = ("L-1945791B", "Running On-Demand Inf instances")
TRN = ("L-2C3B7624", "Running On-Demand Trn instances")
ENDPOINT = "ml.g6.xlarge for endpoint usage"


def quotas(g: float = 64, inf: float = 64, trn: float = 64, endpoint: float = 1) -> dict:
    ec2 = [(G[0], G[1], g), (INF[0], INF[1], inf), (TRN[0], TRN[1], trn)]
    sagemaker = [
        ("L-0A1B2C3D", "ml.g5.xlarge for endpoint usage", 4.0),
        ("L-9F8E7D6C", ENDPOINT, endpoint),
        ("L-11223344", "ml.g6.xlarge for transform job usage", 1.0),
    ]
    return {
        (region, service): entries
        for region in ("us-east-1", "us-east-2", "us-west-2")
        for service, entries in (("ec2", ec2), ("sagemaker", sagemaker))
    }


@pytest.fixture
def plugin_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir()
    plugin = folder / "session-manager-plugin"
    plugin.write_text("#!/bin/sh\nexit 0\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IEXEC)
    return folder


@pytest.fixture
def aws(moto_url, monkeypatch, tmp_path, plugin_dir):
    """Credentials, STS on moto, the PATH holding a stand-in plugin; `aws(quotas)` starts the fake."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", moto_url)
    monkeypatch.setenv(PLACEMENT_ENV, str(tmp_path / "placement.json"))
    monkeypatch.setenv("PATH", f"{plugin_dir}{os.pathsep}{os.environ['PATH']}")
    started: list[FakeServiceQuotas] = []

    def start(table: dict, defaults: dict | None = None) -> FakeServiceQuotas:
        fake = FakeServiceQuotas(table, defaults=defaults).__enter__()
        started.append(fake)
        monkeypatch.setenv("AWS_ENDPOINT_URL_SERVICE_QUOTAS", fake.url)
        return fake

    yield start
    for fake in started:
        fake.__exit__(None, None, None)


def run(tmp_path: Path, *argv: str) -> tuple[int, dict]:
    code = survey.run([*argv, "--dry-run", "--results-dir", str(tmp_path / "results")])
    files = sorted((tmp_path / "results").glob("*/survey-*.json"))
    return code, json.loads(files[-1].read_text())


def rows(evidence: dict) -> dict[str, dict]:
    return {r["backend"]: r for r in evidence["preflight"]["rows"]}


def test_every_default_backend_passes(aws, tmp_path, capsys):
    fake = aws(quotas())
    code, evidence = run(tmp_path)
    assert code == 0
    assert evidence["command"] == "survey"
    plan = rows(evidence)
    assert list(plan) == ["g6", "g5g", "inf2", "trn1", "sagemaker"]
    assert all(r["runs"] for r in plan.values()), plan
    assert evidence["preflight"]["account"]["account"] == "123456789012"
    assert evidence["preflight"]["plugin"]["ok"] is True
    assert plan["g6"]["region"] == "us-east-1" and plan["g6"]["failover"] == ["us-west-2"]
    assert plan["g5g"]["images"] == ["vllm-sm75"] and plan["inf2"]["images"] == ["neuron"]
    # g6 and g5g draw 4 + 8 vCPUs on one G-and-VT quota in us-east-1.
    assert plan["g5g"]["quota"] == f"{G[1]} ({G[0]}): 12 of 64 vCPUs"
    assert plan["sagemaker"]["quota"] == f"{ENDPOINT}: 1 of 1 instances"
    assert plan["g6"]["usd_per_hour"] == pytest.approx(0.8048)
    assert plan["g6"]["ttl_hours"] == 12 and plan["g6"]["ttl_worst_usd"] == pytest.approx(12 * 0.8048, abs=1e-3)
    for row in plan.values():
        for check in row["checks"]:
            assert check["source"], check
    # One GetServiceQuota per (code, region) and ListServiceQuotas pages followed.
    asked = [(region, target, body.get("QuotaCode")) for region, target, body in fake.requests]
    assert asked.count(("us-east-1", "GetServiceQuota", G[0])) == 1
    assert ("us-east-2", "ListServiceQuotas", None) in asked
    out = capsys.readouterr().out
    assert "preflight: what will run where" in out and "5 of 5 backend(s) can run" in out
    assert "build cost unknown" in out


def test_a_backend_with_quota_zero_is_left_out_and_the_others_go_on(aws, tmp_path, capsys):
    aws(quotas(inf=0))
    code, evidence = run(tmp_path)
    assert code == 0
    plan = rows(evidence)
    assert not plan["inf2"]["runs"]
    assert plan["inf2"]["reason"] == f"quota {INF[1]} ({INF[0]}) in us-east-2 is 0 vCPUs; inf2 needs 4"
    assert all(plan[n]["runs"] for n in ("g6", "g5g", "trn1", "sagemaker"))
    assert "left out: quota Running On-Demand Inf" in capsys.readouterr().out


def test_g6_and_g5g_are_summed_against_one_g_quota(aws, tmp_path, capsys):
    aws(quotas(g=8))
    code, evidence = run(tmp_path, "g6", "g5g")
    assert code == 0
    plan = rows(evidence)
    assert plan["g6"]["runs"] and plan["g6"]["quota"] == f"{G[1]} ({G[0]}): 4 of 8 vCPUs"
    assert not plan["g5g"]["runs"]
    assert plan["g5g"]["reason"] == f"quota {G[1]} ({G[0]}) in us-east-1 is 8 vCPUs, 4 already for g6; g5g needs 8"
    assert "left out" in capsys.readouterr().out


def test_a_type_not_offered_in_the_chosen_region_is_left_out(aws, tmp_path):
    aws(quotas())
    code, evidence = run(tmp_path, "inf2", "trn1", "-c", "trn1.regions=us-east-1")
    assert code == 0
    plan = rows(evidence)
    assert list(plan) == ["inf2", "trn1"]
    assert plan["inf2"]["runs"] and plan["inf2"]["region"] == "us-east-2"
    assert not plan["trn1"]["runs"] and plan["trn1"]["region"] == "us-east-1"
    assert "trn1.2xlarge is not offered in us-east-1" in plan["trn1"]["reason"]


def codebuild(arm_xlarge: float, linux_large: float, linux_medium: float = 1.0) -> dict:
    """CodeBuild's concurrent-build quotas as never adjusted: only the AWS defaults list them."""
    entries = [
        ("L-596BEAB4", "Concurrently running builds for ARM/Large environment", 1.0),
        ("L-ARMXLARGE", "Concurrently running builds for ARM/XLarge environment", arm_xlarge),
        ("L-4DDC4A99", "Concurrently running builds for Linux/Large environment", linux_large),
        ("L-LINUXMEDIUM", "Concurrently running builds for Linux/Medium environment", linux_medium),
    ]
    return {(region, "codebuild"): entries for region in ("us-east-1", "us-east-2", "us-west-2")}


def test_a_quota_never_adjusted_is_read_from_the_aws_defaults(aws, tmp_path):
    """ListServiceQuotas and GetServiceQuota leave out a quota never adjusted (no applied value):
    the AWS default is the account's quota, not an unknown."""
    table = quotas()
    for region in ("us-east-1", "us-east-2", "us-west-2"):
        table[(region, "ec2")] = [q for q in table[(region, "ec2")] if q[0] != INF[0]]
        table[(region, "sagemaker")] = [q for q in table[(region, "sagemaker")] if q[1] != ENDPOINT]
    defaults = {(r, "ec2"): [(INF[0], INF[1], 0.0)] for r in ("us-east-1", "us-east-2", "us-west-2")}
    defaults |= {(r, "sagemaker"): [("L-9F8E7D6C", ENDPOINT, 1.0)] for r in ("us-east-1", "us-east-2", "us-west-2")}
    fake = aws(table, defaults=defaults)
    code, evidence = run(tmp_path)
    assert code == 0
    plan = rows(evidence)
    assert plan["sagemaker"]["runs"] and plan["sagemaker"]["quota"] == f"{ENDPOINT}: 1 of 1 instances"
    (check,) = [c for c in plan["sagemaker"]["checks"] if c["what"] == "quota"]
    assert "AWS default (never adjusted)" in check["detail"]
    assert not plan["inf2"]["runs"]
    assert plan["inf2"]["reason"] == f"quota {INF[1]} ({INF[0]}) in us-east-2 is 0 vCPUs; inf2 needs 4"
    asked = {target for _, target, _ in fake.requests}
    assert {"GetAWSDefaultServiceQuota", "ListAWSDefaultServiceQuotas"} <= asked


def test_a_codebuild_quota_of_zero_leaves_out_only_the_backends_that_need_that_build(aws, tmp_path, capsys):
    """A new account's concurrent-build quota of 0: g5g's image cannot be built (ARM XLarge), so g5g
    is left out before anything bills; inf2 and trn1 share one Linux Large build; the rest go on."""
    fake = aws(quotas(), defaults=codebuild(arm_xlarge=0, linux_large=1))
    code, evidence = run(tmp_path)
    assert code == 0
    plan = rows(evidence)
    assert not plan["g5g"]["runs"]
    assert plan["g5g"]["reason"] == (
        "CodeBuild quota Concurrently running builds for ARM/XLarge environment in us-east-1 is 0 "
        "(AWS default (never adjusted)): images/vllm-sm75 cannot be built there"
    )
    assert all(plan[n]["runs"] for n in ("g6", "inf2", "trn1", "sagemaker"))
    assert [c["ok"] for c in plan["g6"]["checks"] if c["what"] == "copy quota"] == [True]
    drawn = [c["detail"] for n in ("inf2", "trn1") for c in plan[n]["checks"] if c["what"] == "build quota"]
    assert (
        drawn
        == [
            "Concurrently running builds for Linux/Large environment in us-east-2: 1 (AWS default (never adjusted)); "
            "1 build(s) drawn"
        ]
        * 2
    )
    assert ("us-east-1", "ListAWSDefaultServiceQuotas", {"ServiceCode": "codebuild"}) in [
        (r, t, {k: v for k, v in b.items() if k == "ServiceCode"}) for r, t, b in fake.requests
    ]
    assert "left out: CodeBuild quota" in capsys.readouterr().out


def test_a_copy_quota_of_zero_is_said_and_the_backends_still_run(aws, tmp_path, capsys):
    """The weights copy runs on Linux Medium: at 0 it cannot start in the region, so every backend
    there reads its model from the hub at boot; the plan says so and leaves nothing out for it."""
    aws(quotas(), defaults=codebuild(arm_xlarge=1, linux_large=1, linux_medium=0))
    code, evidence = run(tmp_path)
    assert code == 0
    plan = rows(evidence)
    assert all(plan[n]["runs"] for n in ("g6", "g5g", "inf2", "trn1", "sagemaker"))
    (g6,) = [c for c in plan["g6"]["checks"] if c["what"] == "copy quota"]
    assert g6["ok"] is False
    assert g6["detail"].startswith(
        "CodeBuild quota Concurrently running builds for Linux/Medium environment in us-east-1 is 0 "
        "(AWS default (never adjusted)): the weights copy cannot run, so "
    )
    assert g6["detail"].endswith("is read from the hub at every boot")
    out = capsys.readouterr().out
    assert "the weights copy cannot run" in out and "5 of 5 backend(s) can run" in out


def test_none_can_run_exits_1(aws, tmp_path):
    aws(quotas(trn=0))
    code, evidence = run(tmp_path, "trn1")
    assert code == 1 and not rows(evidence)["trn1"]["runs"]


def test_no_credentials_is_one_line_and_calls_nothing(monkeypatch, tmp_path, capsys):
    monkeypatch.setenv(PLACEMENT_ENV, str(tmp_path / "placement.json"))

    def no_client(*args, **kwargs):
        raise AssertionError("an AWS client was built")

    monkeypatch.setattr(survey, "boto_client", no_client)
    with pytest.raises(SystemExit) as exit_:
        survey.main_guard(lambda: survey.run(["--dry-run", "--results-dir", str(tmp_path / "results")]))
    assert exit_.value.code == 2
    out = capsys.readouterr().err.strip().splitlines()
    assert len(out) == 1 and "no AWS credentials are configured" in out[0]
    assert not (tmp_path / "results").exists()


def test_an_unknown_backend_names_the_known_ones(capsys):
    with pytest.raises(SystemExit) as exit_:
        survey.main_guard(lambda: survey.run(["nope", "--dry-run"]))
    assert exit_.value.code == 2
    out = capsys.readouterr().err.strip().splitlines()
    assert len(out) == 1 and "unknown backend 'nope'" in out[0] and "g6, g5g, inf2, trn1, sagemaker" in out[0]


def one_line(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as exit_:
        survey.main_guard(lambda: survey.run(list(argv)))
    assert exit_.value.code == 2
    out = capsys.readouterr().err.strip().splitlines()
    assert len(out) == 1, out
    return out[0]


def test_a_whole_survey_without_credentials_is_one_line_and_creates_nothing(capsys, tmp_path):
    line = one_line(capsys, "g6", "--results-dir", str(tmp_path / "results"))
    assert "no AWS credentials are configured" in line
    assert not (tmp_path / "results").exists()


def test_keep_with_down_a_foreign_folder_and_backends_in_context_are_one_line_each(capsys, tmp_path):
    assert "--keep and --down: choose one" in one_line(capsys, "--keep", "--down")
    (tmp_path / "results").mkdir()
    assert "is not a survey's results folder" in one_line(capsys, "--resume", str(tmp_path / "results"))
    (tmp_path / "results" / "survey.json").write_text(json.dumps({"schema": 1, "command": "bench"}))
    assert "survey.json holds no survey steps" in one_line(capsys, "--resume", str(tmp_path / "results"))
    assert "name the backends as arguments" in one_line(capsys, "-c", "backends=g6")
    assert "give no backends" in one_line(capsys, "g6", "--resume", str(tmp_path / "results"))
    assert "(given: repeats)" in one_line(capsys, "--resume", str(tmp_path / "results"), "--repeats", "3")


def test_the_plugin_missing_is_noted(aws, tmp_path, monkeypatch, capsys):
    aws(quotas())
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, evidence = run(tmp_path, "g6", "sagemaker")
    assert code == 0
    assert evidence["preflight"]["plugin"]["ok"] is False
    g6 = rows(evidence)["g6"]
    assert g6["runs"] and any(c["what"] == "forward" for c in g6["checks"])
    assert "Session Manager plugin: missing" in capsys.readouterr().out


def test_help(capsys):
    with pytest.raises(SystemExit) as exit_:
        survey.run(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    assert "--dry-run" in out and "BACKEND" in out


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--workload", "summarize"], "--workload summarize: the survey measures a preset with objectives"),
        (["--workload", "chatty"], "--workload 'chatty': unknown"),
        (["--lengths", "128,x"], "--lengths"),
    ],
)
def test_the_benchmark_steps_workload_and_lengths_are_checked_before_anything_deploys(capsys, tmp_path, argv, line):
    assert line in one_line(capsys, "g6", *argv, "--results-dir", str(tmp_path / "results"))
    assert not (tmp_path / "results").exists()


def test_an_endpoint_of_inference_components_counts_its_most_instances_and_bills_only_while_they_run(aws, tmp_path):
    aws(quotas(endpoint=2))
    scaled = ["-c", "sagemaker-components.maxInstances=2", "-c", "sagemaker-components.maxCopies=2"]
    code, evidence = run(tmp_path, "sagemaker-components", *scaled)
    assert code == 0
    plan = rows(evidence)["sagemaker-components"]
    # Its instances draw on the endpoint-usage quota, counted at the most managed scaling may hold.
    assert plan["runs"] and plan["quota"] == f"{ENDPOINT}: 2 of 2 instances"
    assert plan["price_note"].endswith("; bills only while scaled above zero")
    assert plan["ttl_worst_usd"] == pytest.approx(12 * plan["usd_per_hour"] * 2, abs=1e-3)
    aws(quotas(endpoint=1))
    code, evidence = run(tmp_path, "sagemaker-components", *scaled)
    plan = rows(evidence)["sagemaker-components"]
    assert (
        not plan["runs"]
        and plan["reason"] == f"quota {ENDPOINT} in us-east-2 is 1 instances; sagemaker-components needs 2"
    )
