"""With no AWS account, a server AWS does not bill (the embedded model, an `--endpoint` server) can
still be priced, as the user says: `--price-as NAME=INSTANCE_TYPE` by the hour as the instance it
stands for (the offline table without AWS), `--price NAME=USD_PER_HOUR` at a rate given. The rows
say so (`as g6.xlarge`, `rate given`), the figures stay labelled NOT AWS, and the evidence keeps
what it was priced as. The tok/s priced are the known-rate server's, measured here."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from catalog.prices import EC2, HOURS_PER_MONTH, PRICING_API_REGION, offline_price
from runner import advise, bench, cost
from tests.runner.known_server import known, known_server

G6_HOURLY = offline_price(EC2, "g6.xlarge", PRICING_API_REGION).usd_per_hour  # type: ignore[union-attr]


@pytest.fixture(scope="module")
def measured(tmp_path_factory) -> Path:
    """Bench evidence of a server AWS does not bill: an --endpoint server at a known rate."""
    folder = tmp_path_factory.mktemp("bench")
    with known_server(ttft=0.01, rate=200.0, tokens=40) as server:
        code = bench.run(["--no-aws", "--local", "never", "--endpoint", f"mine={server.url}/v1,model={known.MODEL}",
                          "--repeats", "3", "--max-tokens", "40", "--results-dir", str(folder)])  # fmt: skip
    assert code == 0
    (path,) = folder.glob("*/bench-*.json")
    return path


def run_cost(tmp_path: Path, evidence: Path, *flags: str, code: int = 0) -> dict:
    assert cost.run([str(evidence), "--no-aws", "--results-dir", str(tmp_path), *flags]) == code
    (path,) = tmp_path.glob("*/cost-*.json")
    return json.loads(path.read_text())


def test_without_a_price_a_line_says_how_to_give_one(measured, tmp_path, capsys):
    evidence = run_cost(tmp_path, measured, code=1)
    (row,) = evidence["records"]
    assert row["note"] == "not billed by AWS"
    line = "mine: not billed by AWS; --price-as mine=INSTANCE_TYPE (such as g6.xlarge) or --price mine=USD_PER_HOUR prices it"
    assert line in evidence["notices"] and line in capsys.readouterr().out


def test_priced_as_the_instance_it_stands_for(measured, tmp_path, capsys):
    evidence = run_cost(tmp_path, measured, "--price-as", "mine=g6.xlarge")
    (row,) = evidence["records"]
    tok_s = row["output_tok_s"]
    assert tok_s > 0  # the known server's rate, as bench measured it
    assert row["billing"] == "instance-hours" and row["billed_by"] == "as g6.xlarge"
    assert row["usd_per_hour"] == G6_HOURLY == 0.8048
    assert row["usd_per_million_output"] == pytest.approx(G6_HOURLY / (tok_s * 3600) * 1e6)
    assert row["usd_per_month_24x7"] == pytest.approx(G6_HOURLY * HOURS_PER_MONTH)
    assert row["provenance"] == "--endpoint server, not known to be AWS"  # still labelled NOT AWS
    (backend,) = evidence["backends"]
    assert backend["priced_as"] == {
        "flag": "--price-as mine=g6.xlarge",
        "instance_type": "g6.xlarge",
        "usd_per_hour": None,
    }
    assert evidence["config"]["priced_as"]["mine"]["instance_type"] == "g6.xlarge"
    out = capsys.readouterr().out
    assert "as g6.xlarge $0.8048/h" in out and "NOT AWS" in out


def test_priced_at_a_rate_given(measured, tmp_path, capsys):
    evidence = run_cost(tmp_path, measured, "--price", "mine=0.5")
    (row,) = evidence["records"]
    assert row["billed_by"] == "rate given" and row["price"]["service"] == "given" and row["usd_per_hour"] == 0.5
    assert row["usd_per_million_output"] == pytest.approx(0.5 / (row["output_tok_s"] * 3600) * 1e6)
    assert row["price"]["source"] == "--price mine=0.5: a rate given on the command line, not a list price"
    assert "rate given $0.5000/h" in capsys.readouterr().out


def test_advise_ranks_a_server_priced_as_an_instance(measured, tmp_path):
    """Without --allow-unmeasured-sources: the user priced it, so it is ranked, labelled NOT AWS."""
    code = advise.run(["--requests-per-day", "1000", "--evidence", str(measured), "--no-aws", "--price-as",
                       "mine=g6.xlarge", "--results-dir", str(tmp_path)])  # fmt: skip
    (path,) = tmp_path.glob("*/advise-*.json")
    evidence = json.loads(path.read_text())
    (row,) = evidence["records"]
    assert code == 0 and row["option"] == "mine" and row["meets"] is True
    assert row["monthly_usd"] == pytest.approx(HOURS_PER_MONTH * G6_HOURLY)  # one instance holds 1,000 a day
    assert row["arithmetic"].startswith("priced as given (--price-as mine=g6.xlarge): ")
    assert row["provenance"] == "--endpoint server, not known to be AWS"


@pytest.mark.parametrize(
    ("command", "flags", "said"),
    [
        ("cost", ["--price-as", "mine=m7i.large"],
         "--price-as mine=m7i.large: m7i.large is not in the offline price table (g6.xlarge, g5g.2xlarge, "
         "inf2.xlarge, trn1.2xlarge, ml.g6.xlarge); with AWS credentials the Pricing API prices any type, or give "
         "the rate: --price BACKEND=USD_PER_HOUR"),
        ("cost", ["--price", "other=1"], "--price other=1: no backend other in the evidence given (its backends: mine)"),
        ("cost", ["--price", "mine=1e309"], "--price mine=1e309: inf is not a finite number of US dollars an hour"),
        ("advise", ["--price", "mine=0"], "--price mine=0: a rate must be above 0 US dollars an hour"),
        ("advise", ["--price", "mine=1", "--price-as", "mine=g6.xlarge"],
         "--price-as mine=g6.xlarge: mine is priced twice (--price mine=1); price each backend once"),
    ],
)  # fmt: skip
def test_a_price_that_cannot_be_used_is_one_line_exit_2(measured, tmp_path, monkeypatch, capsys, command, flags, said):
    module = {"cost": cost, "advise": advise}[command]
    inputs = [str(measured)] if command == "cost" else ["--requests-per-day", "10", "--evidence", str(measured)]
    monkeypatch.setattr(sys, "argv", [command, *inputs, "--no-aws", *flags, "--results-dir", str(tmp_path)])
    with pytest.raises(SystemExit) as stopped:
        module.main()
    assert stopped.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"error: {said}"
    assert not list(tmp_path.rglob("*.json"))
