"""The survey's own machinery apart from AWS: one step's outcome whatever its command does, the
step's output kept in its log and on the terminal, and the teardown decision (flag, terminal,
no terminal). The whole survey runs on the emulator: tests/emulator/test_survey.py."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import pytest

from runner.cloud.bring_up.one_stack import UpFile
from runner.core.errors import RunnerError
from runner.core.evidence import Evidence
from runner.flow.folder import SurveyFolder
from runner.flow.options import SurveyOptions
from runner.flow.steps import StepRecord, run_step
from runner.flow.survey_run import SurveyRun
from runner.flow.up_steps import read_up
from runner.render.survey import SurveyFile


@pytest.fixture
def folder(tmp_path) -> SurveyFolder:
    return SurveyFolder.new(tmp_path / "results")


def test_each_outcome_of_a_step_is_recorded_with_its_log_and_its_evidence(folder, capsys):
    def writes_evidence() -> int:
        print("measured 3 backends")
        Evidence("bench", {}, folder.evidence_dir).finish()
        return 0

    def refuses() -> int:
        raise RunnerError("unknown backend 'nope'")

    def argparse_refusal() -> int:
        raise SystemExit(2)

    def has_a_bug() -> int:
        raise ValueError("a bug")

    def interrupted() -> int:
        raise KeyboardInterrupt

    records = [
        run_step(folder, 1, "bench", None, writes_evidence),
        run_step(folder, 2, "ask", "g6", lambda: 1),
        run_step(folder, 3, "check", None, refuses),
        run_step(folder, 4, "cost", None, argparse_refusal),
        run_step(folder, 5, "report", None, has_a_bug),
        run_step(folder, 6, "quality", None, interrupted),
    ]
    assert [(r.status, r.exit_code, r.line) for r in records] == [
        ("passed", 0, ""),
        ("failed", 1, "exit 1"),
        ("failed", 2, "unknown backend 'nope'"),
        ("failed", 2, "the command refused its arguments (exit 2)"),
        ("failed", 1, "ValueError: a bug"),
        ("interrupted", 130, "Ctrl-C"),
    ]
    (path,) = records[0].evidence
    assert path.startswith("evidence/") and path.split("/")[-1].startswith("bench-")
    assert [r.evidence for r in records[1:]] == [[]] * 5
    assert records[1].log == "logs/02-ask-g6.log"
    # Shown on the terminal and kept in the step's log, the one-line fault and the bug's traceback too.
    assert "measured 3 backends" in capsys.readouterr().out
    assert (folder.root / records[0].log).read_text() == "measured 3 backends\n"
    assert "unknown backend 'nope'" in (folder.root / records[2].log).read_text()
    assert "Traceback" in (folder.root / records[4].log).read_text()


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("flags", "terminal", "answer", "expected"),
    [
        ({"keep": True}, False, None, "keep"),
        ({"down": True}, True, None, "down"),
        ({}, False, None, "down"),
        ({}, True, "n\n", "keep"),
        ({}, True, "\n", "down"),
        ({}, True, "yes\n", "down"),
    ],
)
def test_the_teardown_is_the_flag_else_the_terminal_s_answer_else_down(
    folder, monkeypatch, capsys, flags, terminal, answer, expected
):
    options = SurveyOptions(backends=["g6"], with_bedrock=False, **flags)
    evidence = Evidence("survey", {}, folder.root)
    evidence.path = folder.state
    survey = SurveyRun(options, folder, evidence)
    survey.created.stacks = {"InferenceGpuStack": ["us-east-2", "us-east-1"]}
    monkeypatch.setattr("sys.stdin", Terminal(answer or "") if terminal else io.StringIO(""))
    assert survey.decide(interrupted=False) == expected
    asked = "Tear down what this survey created (InferenceGpuStack)? [Y/n]" in capsys.readouterr().out
    assert asked == (terminal and not flags)


def test_a_survey_s_state_names_its_options_for_resume(folder):
    options = SurveyOptions(backends=["g6", "inf2"], with_bedrock=True, context={"lane": "open"}, repeats=3)
    evidence = Evidence("survey", {}, folder.root)
    evidence.path = folder.state
    SurveyRun(options, folder, evidence).save()
    again, state = SurveyFolder.existing(folder.root)
    assert again == folder
    assert SurveyOptions.from_json(state.options) == options
    assert json.loads(folder.state.read_text())["command"] == "survey"


def survey_with(folder: SurveyFolder, **sections: object) -> SurveyRun:
    evidence = Evidence(SurveyFile, {}, folder.root)
    evidence.path = folder.state
    evidence.file = replace(evidence.file, **sections)
    return SurveyRun(SurveyOptions(backends=["g6"], with_bedrock=False), folder, evidence)


def test_what_bills_names_unknown_prices_an_interrupted_deploy_and_stacks_that_stood(folder):
    survey = survey_with(
        folder,
        billing=[{"backend": "g6", "usd_per_hour": 0.8048}, {"backend": "sagemaker", "usd_per_hour": None}],
        pre_existing={"InferenceNeuronStack": "us-east-2"},
    )
    survey.created.stacks = {"InferenceGpuStack": ["us-east-2"]}
    survey.record(StepRecord("up", None, "interrupted"))
    assert survey.billing_text() == (
        "billing now 0.8048 $/h (g6 0.8048, sagemaker (price unknown)); "
        "billing not known: InferenceGpuStack may still be deploying (CloudFormation carries on); "
        "not counted: InferenceNeuronStack (stood before this survey)"
    )
    survey.record(StepRecord("up", None, "passed"))
    assert "billing not known" not in survey.billing_text()


def test_an_unanswered_or_closed_terminal_means_down(folder, monkeypatch, capsys):
    survey = survey_with(folder)
    survey.created.stacks = {"InferenceGpuStack": ["us-east-2"]}
    monkeypatch.setattr("sys.stdin", Terminal(""))  # the end of its input (Ctrl-D)
    assert survey.decide(interrupted=True) == "down"
    assert "no answer (none in 300 s, or the input ended): tearing down" in capsys.readouterr().err


def cloudformation_stubbed():
    import boto3
    from botocore.stub import Stubber

    client = boto3.client("cloudformation", region_name="us-east-2", aws_access_key_id="x", aws_secret_access_key="x")
    return client, Stubber(client)


def stack(status: str) -> dict:
    return {
        "Stacks": [{"StackName": "InferenceGpuStack", "CreationTime": "2026-12-01T00:00:00Z", "StackStatus": status}]
    }


def test_an_update_in_progress_is_cancelled_and_waited_for_before_the_stack_is_deleted(monkeypatch):
    """CloudFormation refuses DeleteStack during an update: the answers are botocore's own shapes
    (Stubber checks every request and answer against the service model)."""
    from runner.cloud.cleanup import survey_teardown

    monkeypatch.setattr(survey_teardown, "SETTLE_POLL_S", 0.0)
    client, stubber = cloudformation_stubbed()
    stubber.add_response("describe_stacks", stack("UPDATE_IN_PROGRESS"), {"StackName": "InferenceGpuStack"})
    stubber.add_response("cancel_update_stack", {}, {"StackName": "InferenceGpuStack"})
    stubber.add_response("describe_stacks", stack("UPDATE_ROLLBACK_IN_PROGRESS"), {"StackName": "InferenceGpuStack"})
    stubber.add_response("describe_stacks", stack("UPDATE_ROLLBACK_COMPLETE"), {"StackName": "InferenceGpuStack"})
    with stubber:
        assert survey_teardown.settle(client, "InferenceGpuStack", 60) == "status UPDATE_ROLLBACK_COMPLETE"
    stubber.assert_no_pending_responses()


def test_a_created_stack_found_in_none_of_its_regions_is_said_so():
    from runner.cloud.cleanup.survey_teardown import Created, tear_down

    client, stubber = cloudformation_stubbed()
    for _ in range(2):
        stubber.add_client_error(
            "describe_stacks", "ValidationError", "Stack with id InferenceGpuStack does not exist", 400
        )
    seen = []
    with stubber:
        actions = tear_down(
            Created({"InferenceGpuStack": ["us-east-2", "us-east-1"]}), 10, lambda service, region: client, seen.append
        )
    assert (
        actions
        == seen
        == [
            {
                "region": "-",
                "kind": "stack",
                "id": "InferenceGpuStack",
                "outcome": "not found in us-east-2, us-east-1: nothing to remove",
            }
        ]
    )


def test_one_survey_process_at_a_time_in_a_folder(folder):
    busy = pytest.raises(RunnerError, match=r"another runner\.survey is running in")
    with folder.in_use(), busy, folder.in_use():
        pass
    with folder.in_use():  # released with the first
        pass


def test_what_up_brought_is_kept_in_the_state_ready_building_or_failed_and_where(folder):
    up: Evidence[UpFile] = Evidence(UpFile, {"expires_at": "2026-12-31T00:00:00Z"}, folder.evidence_dir)
    up.file.records = [
        {"backend": "g6", "stack": "InferenceGpuStack", "region": "us-east-1", "outcome": "ready"},
        {"backend": "inf2", "stack": "InferenceNeuronStack", "region": "us-east-2", "outcome": "building"},
        {"backend": "trn1", "stack": "InferenceNeuronStack", "region": "us-east-2", "outcome": "failed",
         "reason": "no capacity"},
    ]  # fmt: skip
    path = up.finish()
    survey = survey_with(folder, plan={"runs": ["g6", "inf2", "trn1"], "deploy": [], "candidates": {}})
    record = StepRecord("up", None, "passed", evidence=[folder.relative(path)])
    survey.record(record)
    read_up(survey, record)
    state = SurveyFolder.existing(folder.root)[1]
    assert (state.ready, state.building, state.failed) == (["g6"], ["inf2"], {"trn1": "failed: no capacity"})
    assert state.placed == {"g6": ["InferenceGpuStack", "us-east-1"], "inf2": ["InferenceNeuronStack", "us-east-2"],
                            "trn1": ["InferenceNeuronStack", "us-east-2"]}  # fmt: skip
    assert state.expires_at == "2026-12-31T00:00:00Z" and state.steps[-1].line == "trn1: failed: no capacity"
