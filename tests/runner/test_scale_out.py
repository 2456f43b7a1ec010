"""`bench --from-zero` and `bench --step-load` on an endpoint of inference components, through the
emulator (tests/aws_emulator/inference_components.py, sagemaker_runtime.py) with the copies served
by known-rate servers behind the fleet's router (tests/aws_emulator/routing.py) and scaled by the
target tracking simulation (tests/aws_emulator/component_scaling.py). Each figure is checked
against what the test computes from the delays it sets and the servers' speeds."""

from __future__ import annotations

import contextlib
import json
import math
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest

from runner import bench
from runner.core.evidence import load
from runner.figures.scale_out import catch_up, from_zero_p50
from runner.measure.bench_file import BenchFile
from runner.measure.sagemaker import InferenceComponentStreamClient
from tests.aws_emulator.component_scaling import TargetTracking, arm_scale_from_zero, disarm_scale_from_zero, tracking
from tests.aws_emulator.inference_components import COPY_DIMENSION
from tests.aws_emulator.routing import RoutingConfig, routed_fleet
from tests.aws_emulator.sagemaker_runtime import hold_copies_at_zero
from tests.runner.known_server import known_server
from tests.runner.test_inference_components import (
    COMPONENT,
    ENDPOINT,
    REGION,
    component,
    emulated_with_a_model,
    endpoint,
    output,
)


@pytest.fixture(scope="module")
def emulator(tmp_path_factory):
    with emulated_with_a_model(tmp_path_factory.mktemp("emulator")) as emulator:
        yield emulator


def sagemaker():
    return boto3.client("sagemaker", region_name=REGION)


ALARM = f"{COMPONENT}-no-capacity"
TARGET = {"ServiceNamespace": "sagemaker", "ResourceId": f"inference-component/{COMPONENT}",
          "ScalableDimension": COPY_DIMENSION}  # fmt: skip


@pytest.fixture
def deployed(emulator):
    """The catalog's endpoint of inference components at one copy, able to leave zero; removed afterwards."""
    endpoint(ENDPOINT, max_instances=4)
    component(COMPONENT, ENDPOINT)
    arm_scale_from_zero(REGION, COMPONENT)
    yield emulator
    disarm_scale_from_zero(REGION, COMPONENT)
    client = sagemaker()
    client.delete_inference_component(InferenceComponentName=COMPONENT)
    client.delete_endpoint(EndpointName=ENDPOINT)
    client.delete_endpoint_config(EndpointConfigName=ENDPOINT)
    emulator.model_servers.clear()
    # A scale-out from zero still under way (a test stopped while it waited) is void from here.
    hold_copies_at_zero(emulator, COMPONENT, 0.0)


def run_bench(tmp_path: Path, *flags: str, **fields) -> tuple[int, BenchFile, dict]:
    outputs = tmp_path / "outputs.json"
    settings = {"max_copies": 4, "max_instances": 4, "no_capacity_alarm": ALARM} | fields
    stack = {"BackendSagemakerComponents": json.dumps(output(**settings).to_json())}
    outputs.write_text(json.dumps({"InferenceSageMakerStack": stack}))
    results = tmp_path / "bench"
    code = bench.run(
        ["--aws", "--backends", "sagemaker-components", "--outputs-file", str(outputs), "--results-dir",
         str(results), "--max-tokens", "4", *flags]
    )  # fmt: skip
    (path,) = results.glob("*/bench-*.json")
    data = load(path)
    return code, BenchFile.from_json(data), data


def copies_now() -> tuple[int, int]:
    runtime = sagemaker().describe_inference_component(InferenceComponentName=COMPONENT)["RuntimeConfig"]
    return runtime["DesiredCopyCount"], runtime["CurrentCopyCount"]


def first_resend_after(comes_up_s: float) -> float:
    """When the components client's try after a copy came up goes: its tries are 1 s, then 2 s apart."""
    client = InferenceComponentStreamClient
    at, wait = 0.0, client.first_backoff_s
    while at < comes_up_s:
        at += wait
        wait = min(wait * 2, client.max_backoff_s)
    return at


def test_from_zero_times_each_repeat_to_its_first_token_and_gives_the_copies_back(deployed, tmp_path, capsys):
    comes_up_s, ttft, repeats, poll_s = 0.3, 0.05, 2, 1.0
    deployed.runtime_state.component_leave_zero_s[COMPONENT] = comes_up_s
    with known_server(ttft=ttft, rate=100.0, tokens=4, tokenize=False) as server:
        deployed.model_servers[COMPONENT] = server.url
        code, file, data = run_bench(tmp_path, "--from-zero", str(repeats))
        served = len(server.stats()["first_token_s"])
    out = capsys.readouterr().out
    assert code == 0 and served == repeats
    runs = file.from_zero
    assert [(r.repeat, r.ok) for r in runs] == [(n, True) for n in range(1, repeats + 1)]
    # Each repeat: refused until the copy came, the copy seen at the next look, the first token at
    # the first resend after the copy came plus the server's own time to first token.
    expected = first_resend_after(comes_up_s) + ttft
    for run in runs:
        assert run.zero_after_s is not None and run.zero_after_s < poll_s and run.instances_at_zero == 0
        assert run.last_refusal_s is not None and run.last_refusal_s < comes_up_s
        assert comes_up_s <= run.in_service_s <= comes_up_s + poll_s + 0.5
        assert expected <= run.first_token_s <= expected + 0.5
    p50 = from_zero_p50(runs)
    assert expected <= p50 <= expected + 0.5
    assert f"{p50:.2f}" in out and "from zero copies to the first token" in out
    # The copy it had before, given back, and what that bills said.
    assert copies_now() == (1, 1)
    assert (
        "sagemaker-components: inference-sagemaker-components-model at 1 copy (desired 1): billing 1 ml.g6.xlarge"
        in (" ".join(data["notices"]))
    )


def test_from_zero_at_a_component_already_at_zero_leaves_it_at_zero_with_nothing_billing(deployed, tmp_path):
    deployed.runtime_state.component_leave_zero_s[COMPONENT] = 0.1
    sagemaker().update_inference_component_runtime_config(
        InferenceComponentName=COMPONENT, DesiredRuntimeConfig={"CopyCount": 0}
    )
    with known_server(ttft=0.05, rate=100.0, tokens=4, tokenize=False) as server:
        deployed.model_servers[COMPONENT] = server.url
        code, file, data = run_bench(tmp_path, "--from-zero", "1")
    assert code == 0 and [r.ok for r in file.from_zero] == [True]
    assert copies_now() == (0, 0)
    assert any(line.endswith("at 0 copies (desired 0): nothing billing") for line in data["notices"])


def test_ctrl_c_while_a_repeat_waits_for_its_copy_still_gives_the_copies_back(deployed, tmp_path):
    # The copy would come in a minute; Ctrl-C once the first refusal is in (the client waiting to
    # send again): the evidence is saved interrupted, and the component is back at its one copy.
    deployed.runtime_state.component_leave_zero_s[COMPONENT] = 60.0

    refused_before = len(deployed.no_capacity_refusals)

    def ctrl_c_after_the_first_refusal() -> None:
        deadline = time.monotonic() + 60
        while len(deployed.no_capacity_refusals) == refused_before:
            if time.monotonic() > deadline:
                return  # never refused: the bench ends on its own and the test fails on what it left
            time.sleep(0.01)
        signal.raise_signal(signal.SIGINT)

    threading.Thread(target=ctrl_c_after_the_first_refusal, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        run_bench(tmp_path, "--from-zero", "2")
    (path,) = (tmp_path / "bench").glob("*/bench-*.json")
    data = load(path)
    assert data["interrupted"] is True and "from_zero" not in data
    assert copies_now() == (1, 1)
    assert any("at 1 copy (desired 1): billing 1 ml.g6.xlarge" in line for line in data["notices"])


def test_a_server_that_fails_ends_the_repeats_in_one_line_and_still_gives_the_copies_back(deployed, tmp_path):
    deployed.runtime_state.component_leave_zero_s[COMPONENT] = 0.0
    deployed.model_servers[COMPONENT] = "http://127.0.0.1:9"  # nothing listens: the model container fails
    code, file, data = run_bench(tmp_path, "--from-zero", "3")
    assert code == 1
    (run,) = file.from_zero
    assert not run.ok and run.error and "\n" not in run.error
    assert any(line.startswith("sagemaker-components from zero, repeat 1: ") for line in data["notices"])
    assert copies_now() == (1, 1)


@pytest.mark.parametrize(
    ("setup", "fields", "missing"),
    [
        (None, {"no_capacity_alarm": None}, "no no-capacity alarm in its stack output (the stack makes one only at "
                                            "minCopies 0)"),
        ({"actions": False}, {}, f"its alarm {ALARM} has its actions disabled (the time-to-live; runner.up brings it "
                                 "back)"),
        ({"min_copies": 1}, {}, f"its scalable target's MinCapacity is 1, not 0 (inference-component/{COMPONENT} "
                                "DesiredCopyCount 1-4)"),
    ],
)  # fmt: skip
def test_from_zero_without_what_starts_a_copy_is_one_line_and_the_copies_untouched(
    deployed, tmp_path, setup, fields, missing
):
    """Nothing leaves zero without the no-capacity alarm acting and a target whose MinCapacity is 0:
    target tracking has no per-copy datapoint at zero copies (SageMaker developer guide, "Scale an
    endpoint to zero instances"), and Application Auto Scaling keeps copies within the target's
    bounds (RegisterScalableTarget). Each repeat would wait its whole budget for a copy."""
    if setup:
        arm_scale_from_zero(REGION, COMPONENT, **setup)
    modified = sagemaker().describe_inference_component(InferenceComponentName=COMPONENT)["LastModifiedTime"]
    code, file, data = run_bench(tmp_path, "--from-zero", "2", **fields)
    assert code == 1 and not file.from_zero
    assert [n for n in data["notices"] if "--from-zero" in n] == [
        f"sagemaker-components: --from-zero skipped: {missing}: nothing would start a copy from zero; its copies "
        "left as they are"
    ]
    # No change of copies was asked for: the component is as it was.
    described = sagemaker().describe_inference_component(InferenceComponentName=COMPONENT)
    assert described["LastModifiedTime"] == modified and copies_now() == (1, 1)


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--step-load", "2,8"], "give --goodput ttft:MS"),
        (["--step-load", "8,2", "--goodput", "ttft:400"], "1 <= C1 < C2"),
        (["--step-load", "2,8,32", "--goodput", "ttft:400"], "two concurrencies"),
        (["--step-seconds", "1,2", "--from-zero", "1"], "give --step-load"),
        (["--from-zero", "0"], "--from-zero"),
        (["--from-zero", "1", "--concurrency", "4"], "not with --concurrency"),
    ],
)
def test_what_makes_no_scale_out_run_is_one_line_and_exit_2(flags, says, capsys):
    with pytest.raises(SystemExit) as stopped:
        from runner.cli.session import main_guard

        main_guard(lambda: bench.run([*flags, "--no-aws"]))
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and says in err and "Traceback" not in err
    assert len([line for line in err.splitlines() if line.strip()]) == 1


def test_a_backend_that_is_no_component_is_skipped_in_one_line(tmp_path, capsys):
    with known_server(ttft=0.01, rate=100.0, tokens=4) as server:
        code = bench.run(
            ["--no-aws", "--endpoint", server.endpoint, "--from-zero", "1", "--results-dir", str(tmp_path)]
        )
    said = capsys.readouterr()
    assert code == 1 and "--from-zero and --step-load measure an inference component's copies" in said.err


@contextlib.contextmanager
def fleet_of(deployed, servers: int, **settings) -> Iterator:
    """`servers` known-rate servers behind the router, serving as many as the component has copies."""
    with contextlib.ExitStack() as stack:
        urls = [stack.enter_context(known_server(tokenize=False, **settings)).url for _ in range(servers)]
        fleet = stack.enter_context(routed_fleet(urls, RoutingConfig(), copies=1))
        deployed.model_servers[COMPONENT] = fleet.url
        yield fleet


# One copy serves two requests at once (the rest queue at it); each takes 0.1 s to its first token
# and 3 more tokens at 20/s.
COPY = {"ttft": 0.1, "rate": 20.0, "tokens": 4, "max_running": 2}
SERVICE_S = COPY["ttft"] + (COPY["tokens"] - 1) / COPY["rate"]


def test_a_step_that_no_copy_follows_is_marked_never_caught_up_with_what_was_sampled(deployed, tmp_path, capsys):
    # No scaling policy acts: one copy serving one request at a time, four asked for. Each waits
    # for the three ahead of it, past the objective, for as long as the run lasts.
    slo_ms, before_s, after_s, sample_s = 400, 0.6, 1.2, 0.3
    one_at_a_time = COPY | {"max_running": 1}
    assert COPY["ttft"] * 1000 < slo_ms < (COPY["ttft"] + 3 * SERVICE_S) * 1000
    # The scalable target as the stack registers it at the default maxCopies of 1.
    boto3.client("application-autoscaling", region_name=REGION).register_scalable_target(
        **TARGET, MinCapacity=0, MaxCapacity=1
    )
    with fleet_of(deployed, 1, **one_at_a_time):
        code, file, data = run_bench(
            tmp_path, "--step-load", "1,4", "--goodput", f"ttft:{slo_ms}",
            "--step-seconds", f"{before_s},{after_s}", "--sample-seconds", str(sample_s),
        )  # fmt: skip
    said = capsys.readouterr()
    assert code == 0
    (step,) = file.step_load
    assert (step.base, step.stepped, step.step_at_s, step.bound_s) == (1, 4, before_s, after_s)
    caught = catch_up(step)
    assert not caught.caught_up and caught.missed_s is None and (caught.copies_before, caught.copies_after) == (1, 1)
    # Before the step every window met the objective; the windows after it answered, late.
    met_before = [s for s in step.samples if s.at_s <= before_s and s.first_tokens]
    assert met_before and all(s.ttft_p95_s <= slo_ms / 1000 for s in met_before)
    assert step.failed == 0 and step.requests > 0
    line = f"sagemaker-components: the step 1 -> 4 never caught up within {after_s:g} s"
    assert any(n.startswith(line) for n in data["notices"]) and line in said.err.replace("\n", " ")
    # Said before the step: a target whose MaxCapacity is 1 lets no policy add a copy.
    cannot = (
        "sagemaker-components: --step-load: its copies cannot scale out (its scalable target's MaxCapacity "
        f"(inference-component/{COMPONENT} DesiredCopyCount 0-1); 1 in service): the step measures what they do "
        "with the load as they are"
    )
    assert data["notices"].index(cannot) < next(i for i, n in enumerate(data["notices"]) if n.startswith(line))
    assert f"never caught up (> {after_s:g})" in said.out


@pytest.mark.emulator  # about 5 s: the slower tier
def test_a_4x_step_is_caught_up_when_the_copies_target_tracking_adds_are_in_service(deployed, tmp_path, capsys):
    slo_ms, before_s, after_s, sample_s = 400, 1.0, 3.5, 0.25
    policy = TargetTracking(COMPONENT, target=2.0, min_copies=1, max_copies=4, copy_start_s=1.0, time_scale=0.02)
    base, stepped = 2, 8
    # At the base load one copy carries its two at once: within the objective, at the target. At
    # 4x, six wait at the one copy: three requests' time for the last of them, past the objective.
    drain = (stepped - COPY["max_running"]) / COPY["max_running"] * SERVICE_S
    assert COPY["ttft"] * 1000 < slo_ms < (COPY["ttft"] + drain) * 1000
    wanted = math.ceil(1 * stepped / policy.target)
    with fleet_of(deployed, wanted, **COPY) as running, tracking(deployed, running.fleet, policy) as simulation:
        code, file, _ = run_bench(
            tmp_path, "--step-load", f"{base},{stepped}", "--goodput", f"ttft:{slo_ms}",
            "--step-seconds", f"{before_s},{after_s}", "--sample-seconds", str(sample_s),
        )  # fmt: skip
    assert code == 0
    (step,) = file.step_load
    caught = catch_up(step)
    (activity,) = simulation.activities
    assert (activity.copies_from, activity.copies_to) == (1, wanted)
    assert (caught.copies_before, caught.copies_after) == (1, wanted)
    # The alarm fires on the third period above the target after the step (the one the step fell
    # in may count), and the copies come `copy_start_s` later.
    period = policy.period_s
    soonest = (policy.timing.out_datapoints - 1) * period + policy.copy_start_s
    latest = policy.timing.out_datapoints * period + policy.copy_start_s
    assert soonest - sample_s <= caught.scaled_s <= latest + sample_s + 0.3
    # The objective is missed until the copies are in service and the queue left at the first one
    # (six requests, two at a time) has had its first tokens.
    assert caught.caught_up
    assert soonest - sample_s <= caught.missed_s <= latest + drain + sample_s + 0.3
    assert f"TTFT p95 objective {slo_ms} ms" in capsys.readouterr().out


def test_an_endpoint_that_gives_no_instance_count_bills_an_unknown_number_not_nothing(deployed):
    """CurrentInstanceCount is optional in DescribeEndpoint's ProductionVariantSummary (botocore's
    sagemaker model): absent, what bills is unknown."""
    from moto.sagemaker.models import sagemaker_backends

    from runner.measure.scale_out import Copies
    from tests.aws_emulator.account import ACCOUNT

    sagemaker().update_inference_component_runtime_config(
        InferenceComponentName=COMPONENT, DesiredRuntimeConfig={"CopyCount": 0}
    )
    for summary in sagemaker_backends[ACCOUNT][REGION].endpoints[ENDPOINT].production_variants:
        summary.pop("CurrentInstanceCount", None)
    copies = Copies.__new__(Copies)
    copies.name, copies.endpoint, copies.instance_type, copies.client = COMPONENT, ENDPOINT, "ml.g6.xlarge", sagemaker()
    assert copies.instances() is None
    assert (
        copies.billing()
        == f"{COMPONENT} at 0 copies (desired 0): billing an unknown number of ml.g6.xlarge by the instance-hour"
    )


def test_copies_refused_while_the_component_is_updating_are_restored_once_it_is_in_service(deployed):
    """After a repeat the copy its request started may still be coming (Updating); the emulator
    then refuses another change (tests/aws_emulator/inference_components.py: AWS's answer there is
    UNCONFIRMED). The copies are set once the component is InService."""
    from moto.sagemaker.models import sagemaker_backends

    from runner.measure.scale_out import Copies, ScaleOutPlan, restore
    from tests.aws_emulator.account import ACCOUNT
    from tests.aws_emulator.inference_components import components

    deployed.component_settle_s = 0.5
    deployed.inference_components.refuse_updates_while_busy = True
    try:
        sagemaker().update_inference_component_runtime_config(
            InferenceComponentName=COMPONENT, DesiredRuntimeConfig={"CopyCount": 2}
        )
        copies = Copies.__new__(Copies)
        copies.name, copies.client = COMPONENT, sagemaker()
        plan = ScaleOutPlan(1, None, 1.0, 1.0, 1.0, poll_s=0.05, zero_budget_s=5.0)
        started = time.monotonic()
        restore(copies, 1, plan)
        waited = time.monotonic() - started
    finally:
        deployed.component_settle_s = 0
        deployed.inference_components.refuse_updates_while_busy = False
        for component in components(sagemaker_backends[ACCOUNT][REGION]).values():
            component.busy = ""  # settled, so the fixture can delete it
    assert copies_now() == (1, 1) and 0.3 <= waited <= 2.0


def test_the_simulation_scales_in_after_fifteen_minutes_below_the_target_and_out_after_three_periods():
    """SageMaker developer guide, "Define a scaling policy": with the high-resolution metrics the
    policy "scales in at the same rate as standard metrics": 15 minute data points below the target,
    six of the 10 s ones each. Scale-out stays at 3 of the 10 s periods (UNCONFIRMED)."""
    from datetime import datetime

    from tests.aws_emulator.component_scaling import ComponentScaling
    from tests.aws_emulator.inference_components import Component

    def periods_until(metric: float, copies: int) -> tuple[int, int]:
        policy = TargetTracking(COMPONENT, target=2.0, min_copies=1, max_copies=4, copy_start_s=0.0)
        simulation = ComponentScaling(None, None, policy)
        decided: list[tuple[int, int]] = []
        simulation.scale = lambda component, current, wanted, cooldown, out: decided.append((current, wanted))
        now = datetime.now()
        held = Component("c", "arn", "e", "arn", "AllTraffic", {}, copies, now, now, current_copies=copies)
        for period in range(1, 200):
            simulation.datapoints.append((time.monotonic(), metric))
            simulation.evaluate(held, metric)
            if decided:
                return period, decided[0][1]
        raise AssertionError("no scaling decided in 200 periods")

    assert periods_until(0.0, copies=3) == (15 * 6, 1)
    assert periods_until(8.0, copies=1) == (3, 4)
