"""`runner.quality` with no `--items` is a quick look (8 items, two a family: about a minute and a
half on the embedded model, where the survey's 100 took 19 minutes) that still gives an interval,
and says how to ask for the survey's set; the survey itself still asks for 100."""

from __future__ import annotations

import json
from pathlib import Path

from runner import quality
from runner.agent.tasks import DEFAULT_ITEMS, SURVEY_ITEMS, generate
from runner.flow.options import SurveyOptions
from tests.runner.fake_openai import FakeOpenAI, text


def run(tmp_path: Path, *flags: str) -> tuple[int, dict]:
    code = quality.run(["--no-aws", "--local", "never", "--results-dir", str(tmp_path), "--timeout", "5", *flags])
    (path,) = tmp_path.glob("*/quality-*.json")
    return code, json.loads(path.read_text())


def test_the_default_is_a_quick_look_with_an_interval_and_says_how_to_ask_for_more(tmp_path, capsys):
    tasks = generate(DEFAULT_ITEMS, families=["arithmetic"])
    with FakeOpenAI([text(f"Answer: {t.expected}") for t in tasks]) as fake:
        code, evidence = run(tmp_path, "--families", "arithmetic", "--endpoint", f"good={fake.url}")
    assert code == 0
    assert len(evidence["records"]) == DEFAULT_ITEMS == 8 and evidence["config"]["items"] == 8
    (summary,) = evidence["summary"]
    overall = summary["overall"]
    assert (overall["correct"], overall["total"]) == (8, 8)
    assert 0 < overall["low"] < overall["high"] == 1.0  # 8 of 8: an interval, wide (67.6-100 %)
    err = capsys.readouterr().err
    assert (
        "quality: 8 items (2 a family), a quick look whose interval is wide; --items 100 runs the survey's set" in err
    )


def test_items_given_is_taken_as_given_and_the_survey_still_asks_for_100(tmp_path, capsys):
    tasks = generate(3, families=["arithmetic"])
    with FakeOpenAI([text(f"Answer: {t.expected}") for t in tasks]) as fake:
        _, evidence = run(tmp_path, "--items", "3", "--families", "arithmetic", "--endpoint", f"good={fake.url}")
    assert len(evidence["records"]) == 3 and "a quick look" not in capsys.readouterr().err
    assert SurveyOptions(backends=[], with_bedrock=False).quality_items == SURVEY_ITEMS == 100
