"""runner.advise --load: the fleet question, from bench evidence written here in the bench's own
format. Each copy count of an endpoint of inference components is a file of its own that records
the endpoint's copies; its capacity within the objectives is a real capacity search
(`find_capacity`) over levels whose speed the test sets (the copies carry up to a rate set here,
each less than the one before). Every count, $/h and $/M asserted is computed in the test from
the capacities the searches found and the offline table's prices, by the rules the command
states: a count measured to carry the load, else the line between two counts measured, else past
the largest at its capacity per copy (EXTRAPOLATED); one count measured gives no count; a load no
option carries is one line and exit 1."""

from __future__ import annotations

import io
import json
import math

import pytest
from rich.console import Console

from catalog.prices import BEDROCK, EC2, SAGEMAKER, offline_price
from runner import advise
from runner.core.errors import RunnerError
from runner.core.evidence import load, strict_json
from runner.costing.advice import Measured, measured_options
from runner.costing.fleet import FleetAdvice, Packing, fleets_of, packing, parse_load
from runner.measure.capacity import Budget, find_capacity
from runner.render.tables import renderer_for, typed
from tests.runner.test_capacity_found import summary
from tests.runner.test_cost import backend_entry, one_at_a_time, write_evidence

COMPONENTS = "sagemaker-components"
IC_HOURLY = offline_price(SAGEMAKER, "ml.g6.xlarge", "us-east-1").usd_per_hour  # the offline table's
OUT_TOKENS = 100
# One copy carries 2 good requests/s; two 90 % of twice that; four 75 % of four times it.
CARRIES = {1: 2.0, 2: 3.6, 4: 6.0}
# What vllm bench serve calls the objectives, as the bench's config keeps them.
CONFIG = {
    "workload": {"input_tokens": [20], "output_tokens": OUT_TOKENS},
    "slo": {"limits_ms": {"tpot": 50}, "text": "tpot:50"},
    "slo_share": 0.9,
}


def searched(carries: float, backend: str) -> dict:
    """A rate search over levels that meet the objectives up to `carries` requests/s (100 output
    tokens a request, every request good below it, none above)."""
    search = find_capacity(
        lambda rate: summary(1.0 if rate <= carries else 0.0, 100.0 * rate),
        mode="rate",
        slo_share=0.9,
        budget=Budget(20),
    )
    return search.found(backend, 20, f"capacity of {backend}").to_json()


def component_bench(tmp_path, copies: int, carries: float, *, instance_type: str = "ml.g6.xlarge", bounds=None):
    """A bench file of an endpoint of inference components measured at `copies` copies."""
    low, high = bounds or (copies, copies)
    entry = backend_entry(
        COMPONENTS,
        endpoint_name="e",
        inference_component_name="ic",
        copies=copies,
        min_copies=low,
        max_copies=high,
        accelerators_per_copy=1,
    )
    entry["stack_output"]["instance_type"] = instance_type
    name = f"bench-{instance_type}-{copies}.json"
    return write_evidence(tmp_path, [entry], [], name=name, config=CONFIG, capacity=[searched(carries, COMPONENTS)])


def good_rps(path) -> float:
    """The good requests/s the file's search found at its capacity."""
    (search,) = json.loads(path.read_text())["capacity"]
    return search["at_capacity"]["goodput_rps"]


def single_bench(tmp_path, carries: float):
    """g6 (one EC2 instance) with its own capacity search, and Bedrock measured one at a time."""
    backends = [backend_entry("g6", auto_scaling_group="g", readiness_parameter="/r"), backend_entry("bedrock")]
    records = one_at_a_time("bedrock", [1.0, 1.2, 1.1])
    return write_evidence(
        tmp_path, backends, records, name="bench-single.json", config=CONFIG, capacity=[searched(carries, "g6")]
    )


def run_fleet(tmp_path, paths, load: str, *flags, code=0):
    out = tmp_path / f"advice-{load}"
    argv = ["--evidence", *map(str, paths), "--offline", "--results-dir", str(out), "--load", load]
    argv += ["--input-tokens", "20", "--output-tokens", str(OUT_TOKENS), "--goodput", "tpot:50", *flags]
    assert advise.run(argv) == code
    (saved,) = out.glob("*/advise-*.json")
    return json.loads(saved.read_text())


def rows(evidence) -> dict[str, dict]:
    return {row["option"]: row for row in evidence["fleet"]}


@pytest.fixture
def fleet(tmp_path):
    """The endpoint measured at 1, 2 and 4 copies, with what each count's search found."""
    paths = {copies: component_bench(tmp_path, copies, carries) for copies, carries in CARRIES.items()}
    return paths, {copies: good_rps(path) for copies, path in paths.items()}


def test_the_count_is_the_fewest_copies_measured_to_carry_the_load_priced_an_hour_and_per_million(fleet, tmp_path):
    paths, found = fleet
    load = (found[1] + found[2]) / 2  # more than one copy carried, less than two
    evidence = run_fleet(tmp_path, paths.values(), f"{load}rps")
    row = rows(evidence)[COMPONENTS]
    usd_h = 2 * IC_HOURLY  # two copies, one L4 each, on two one-GPU instances
    usd_m = usd_h / (load * OUT_TOKENS * 3600) * 1e6
    assert (row["count"], row["instances"], row["instance_type"], row["meets"]) == (2, 2, "ml.g6.xlarge", True)
    assert row["usd_per_hour"] == pytest.approx(usd_h) and row["usd_per_million_output"] == pytest.approx(usd_m)
    assert evidence["answer"] == (
        f"{load:g} requests/s within tpot:50: 2 copies on ml.g6.xlarge (2 instances) ({COMPONENTS}), "
        f"${usd_h:,.2f}/h, ${usd_m:,.2f}/M output tokens"
    )
    assert evidence["config"]["load_rps"] == pytest.approx(load)


def test_between_two_measured_counts_the_capacity_is_read_on_the_line_between_them(fleet, tmp_path):
    paths, found = fleet
    three = found[2] + (found[4] - found[2]) / 2  # what 3 copies carry on the line
    load = (found[2] + three) / 2
    row = rows(run_fleet(tmp_path, paths.values(), str(load)))[COMPONENTS]
    assert row["count"] == 3 and row["usd_per_hour"] == pytest.approx(3 * IC_HOURLY)
    assert "read on the line between them" in row["how"] and "extrapolated" not in row


def test_past_the_largest_count_its_capacity_per_copy_is_carried_on_and_labelled(fleet, tmp_path):
    paths, found = fleet
    load = 1.5 * found[4]
    copies = math.ceil(load / (found[4] / 4))  # four copies' capacity per copy, not one copy's times N
    assert copies > math.ceil(load / found[1])
    evidence = run_fleet(tmp_path, paths.values(), f"{load}/s")
    row = rows(evidence)[COMPONENTS]
    assert row["count"] == copies and row["usd_per_hour"] == pytest.approx(copies * IC_HOURLY)
    assert "EXTRAPOLATED" in row["extrapolated"] and evidence["answer"].endswith(
        "EXTRAPOLATED past the largest copy count measured"
    )


def test_one_count_measured_gives_no_count_and_says_so(tmp_path):
    path = component_bench(tmp_path, 1, CARRIES[1])
    evidence = run_fleet(tmp_path, [path], "1", code=1)
    row = rows(evidence)[COMPONENTS]
    assert row["count"] is None and row["usd_per_hour"] is None and row["meets"] is None
    assert "scaling not measured: capacity at one copy count only" in row["why"]


def test_copies_that_could_scale_while_measured_are_not_read_as_a_count(tmp_path, capsys):
    paths = [component_bench(tmp_path, 1, CARRIES[1]), component_bench(tmp_path, 2, CARRIES[2], bounds=(0, 2))]
    evidence = run_fleet(tmp_path, paths, "1", code=1)
    assert "scaling not measured" in rows(evidence)[COMPONENTS]["why"]
    assert any("copies could scale between 0 and 2 while it was measured" in n for n in evidence["notices"])


def test_single_instances_and_bedrock_stand_beside_the_fleet(fleet, tmp_path):
    paths, found = fleet
    single = single_bench(tmp_path, 2.5)
    carried = good_rps(single)
    load = found[2] * 0.99  # two copies carry it, one g6 does not
    assert load > carried
    evidence = run_fleet(tmp_path, [*paths.values(), single], str(load))
    table = rows(evidence)
    assert table["g6"]["meets"] is False and table["g6"]["count"] is None
    assert table["g6"]["why"].startswith(f"one instance carries {carried:.3g} good req/s, below {load:g}")
    # Bedrock: the load's tokens at their list prices, held for the hour.
    price = offline_price(BEDROCK, "Nova Micro", "us-east-1")
    usd_h = load * 3600 * (20 * price.usd_per_million_input + OUT_TOKENS * price.usd_per_million_output) / 1e6
    assert table["bedrock"]["usd_per_hour"] == pytest.approx(usd_h, rel=1e-9)
    assert table["bedrock"]["usd_per_million_output"] == pytest.approx(usd_h / (load * OUT_TOKENS * 3600) * 1e6)
    # At a load one g6 carries, it is one instance at its hour.
    low = run_fleet(tmp_path, [*paths.values(), single], str(carried * 0.9))
    g6 = rows(low)["g6"]
    g6_hourly = offline_price(EC2, "g6.xlarge", "us-east-1").usd_per_hour
    assert (g6["count"], g6["unit"], g6["meets"]) == (1, "instance", True)
    assert g6["usd_per_hour"] == pytest.approx(g6_hourly)
    assert low["fleet"][0]["option"] == "g6"  # one g6 is cheaper than a copy on ml.g6.xlarge


def test_a_load_no_measured_option_carries_is_one_line_and_exit_1(tmp_path, capsys):
    # One copy count (no scaling measured) and one g6 that carries less than the load.
    paths = [component_bench(tmp_path, 1, CARRIES[1]), single_bench(tmp_path, 2.5)]
    evidence = run_fleet(tmp_path, paths, "500rps", code=1)
    assert [row["meets"] for row in evidence["fleet"]] == [None, None, False]  # components, Bedrock, g6
    assert evidence["answer"] == "no measured option carries 500 requests/s within tpot:50"
    out = capsys.readouterr().out
    assert out.count("no measured option carries 500 requests/s within tpot:50") == 1


def options_of(paths) -> list[Measured]:
    from runner.costing.advice import Workload

    workload = Workload(86400.0, (1.0,) * 24, "flat", 20, OUT_TOKENS, slo=(("tpot", 50.0),))
    return [o for p in paths for o in measured_options(str(p), json.loads(p.read_text()), OUT_TOKENS, workload)]


def test_copies_packed_on_a_four_gpu_instance_against_one_gpu_instances_in_dollars_per_million(tmp_path):
    spread = {c: component_bench(tmp_path, c, CARRIES[c]) for c in (1, 2, 4)}
    # Packed, the copies share one instance's host: each count carries a little less.
    packed = {c: component_bench(tmp_path, c, 0.9 * CARRIES[c], instance_type="ml.g6.12xlarge") for c in (1, 2, 4)}
    fleets, rest, _ = fleets_of(options_of([*spread.values(), *packed.values()]))
    assert rest == [] and sorted(f.measured.instance_type for f in fleets) == ["ml.g6.12xlarge", "ml.g6.xlarge"]
    twelve = 4.6016  # an hourly rate set here for the four-GPU type
    hour = {id(f): twelve if f.gpus_per_instance == 4 else IC_HOURLY for f in fleets}
    table = {row.copies: row for row in packing(fleets, hour, OUT_TOKENS)}
    assert sorted(table) == [1, 2, 4]
    for copies in (1, 2, 4):
        row = table[copies]
        packed_rps, spread_rps = good_rps(packed[copies]), good_rps(spread[copies])
        assert (row.packed.instances, row.spread.instances) == (1, copies)
        assert row.packed.usd_per_million_output == pytest.approx(twelve / (packed_rps * OUT_TOKENS * 3600) * 1e6)
        assert row.spread.usd_per_million_output == pytest.approx(
            copies * IC_HOURLY / (spread_rps * OUT_TOKENS * 3600) * 1e6
        )


def test_a_packed_fleet_with_no_one_gpu_fleet_to_compare_says_why(tmp_path):
    packed = [component_bench(tmp_path, c, CARRIES[c], instance_type="ml.g6.12xlarge") for c in (1, 2)]
    fleets, _, _ = fleets_of(options_of(packed))
    rows_ = packing(fleets, {id(f): None for f in fleets}, OUT_TOKENS)
    assert [(r.copies, r.spread, r.why) for r in rows_] == [
        (1, None, "no endpoint of one-GPU instances of this model measured"),
        (2, None, "no endpoint of one-GPU instances of this model measured"),
    ]
    assert all(r.packed.why == "no price" for r in rows_)


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--load", "200users"], "--load '200users': concurrent users are not a rate"),
        (["--load", "fast"], "--load 'fast': expected requests a second"),
        (["--load", "0"], "--load '0': must be above 0"),
        (["--load", "5", "--requests-per-day", "9"], "--requests-per-day prices a month, --load sizes a fleet"),
        (["--load", "5", "--shape", "spiky"], "--load is a steady rate"),
        (["--load", "5"], "--load needs objectives"),
    ],
)
def test_bad_load_input_is_one_line_and_exit_2(tmp_path, capsys, flags, says):
    path = component_bench(tmp_path, 1, CARRIES[1])
    argv = ["--evidence", str(path), "--offline", "--results-dir", str(tmp_path / "out"), *flags]
    with pytest.raises(SystemExit) as exit_:
        advise.main_guard(lambda: advise.run(argv))
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0], err
    assert not (tmp_path / "out").exists()


def test_a_rate_is_requests_a_second_in_any_of_its_spellings():
    assert [parse_load(t) for t in ("20", "20rps", "20 req/s", "20/s", "2.5RPS")] == [20, 20, 20, 20, 2.5]
    with pytest.raises(RunnerError):
        parse_load("inf")


def test_the_fleet_file_reads_back_typed_is_written_again_as_it_was_and_draws_its_tables(tmp_path):
    spread = [component_bench(tmp_path, c, CARRIES[c]) for c in (1, 2)]
    packed = [component_bench(tmp_path, c, CARRIES[c], instance_type="ml.g6.12xlarge") for c in (1, 2)]
    out = tmp_path / "advice-readback"
    argv = ["--evidence", *map(str, spread + packed), "--offline", "--results-dir", str(out), "--load", "3"]
    advise.run([*argv, "--input-tokens", "20", "--output-tokens", str(OUT_TOKENS), "--goodput", "tpot:50"])
    (saved,) = out.glob("*/advise-*.json")
    read = typed(load(saved), saved)
    assert isinstance(read.fleet[0], FleetAdvice) and isinstance(read.packing[0], Packing)
    assert strict_json(read.to_json()) + "\n" == saved.read_text()
    drawn = Console(file=io.StringIO(), width=200, color_system=None)
    renderer_for("advise")(read, drawn, None)
    assert "packed on one instance of several GPUs" in drawn.file.getvalue()


def test_a_purchase_option_the_fleet_cannot_be_bought_at_is_on_demand_with_why(fleet, tmp_path):
    paths, found = fleet
    row = rows(run_fleet(tmp_path, paths.values(), str(found[1] * 0.9), "--purchase", "spot"))[COMPONENTS]
    assert row["usd_per_hour"] == pytest.approx(IC_HOURLY)
    assert row["priced_at"] == (
        "on-demand (Spot absent: no Spot for SageMaker endpoints or transform jobs (SageMaker's managed Spot is "
        "for training jobs))"
    )


def test_a_fleet_measured_on_emulated_aws_is_refused_unless_asked_for_then_labelled(tmp_path, capsys, fleet):
    paths, found = fleet
    for path in paths.values():  # the same files, as a run against the emulator marks them
        path.write_text(json.dumps(json.loads(path.read_text()) | {"emulated": True}))
    with pytest.raises(SystemExit) as exit_:
        advise.main_guard(lambda: advise.run(["--evidence", *map(str, paths.values()), "--offline", "--load", "1",
                                              "--goodput", "tpot:50", "--results-dir", str(tmp_path / "no")]))  # fmt: skip
    assert exit_.value.code == 2 and "measured on emulated AWS, not AWS" in capsys.readouterr().err
    evidence = run_fleet(tmp_path, paths.values(), str(found[1] * 0.9), "--allow-unmeasured-sources")
    row = rows(evidence)[COMPONENTS]
    assert row["provenance"] == "emulated AWS" and row["count"] == 1
