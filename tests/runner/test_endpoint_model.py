"""`--endpoint NAME=URL` without `model=`: the runner asks the server which model it serves
(`GET /v1/models`, which vLLM and llama.cpp both answer) and names that one in every request,
rather than a made-up `default`; a server that lists several, or none, is one line asking for
`model=`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from runner import bench
from runner.cli.options import CommonOptions
from runner.cli.session import discover
from runner.core.backends import parse_endpoint
from tests.runner.fake_openai import FakeOpenAI, text


def run_bench(tmp_path: Path, endpoint: str) -> tuple[int, dict]:
    code = bench.run(["--no-aws", "--local", "never", "--endpoint", endpoint, "--repeats", "2",
                      "--results-dir", str(tmp_path)])  # fmt: skip
    (path,) = tmp_path.glob("*/bench-*.json")
    return code, json.loads(path.read_text())


def test_the_one_model_the_server_lists_is_the_one_every_request_names(tmp_path):
    with FakeOpenAI([text("the ocean is deep")]) as server:
        server.models = [{"id": "google/gemma-3-270m", "object": "model"}]
        code, evidence = run_bench(tmp_path, f"x={server.url}/v1")
        sent = [body["model"] for body in server.requests]
    assert code == 0
    assert sent == ["google/gemma-3-270m"] * 3  # the warm-up and both timed requests
    (backend,) = evidence["backends"]
    assert backend["model_id"] == "google/gemma-3-270m"
    assert "the one its server lists (GET /v1/models)" in " ".join(backend["notes"])


def test_the_listed_models_context_is_the_backends_context():
    """vLLM lists each model's `max_model_len`; llama.cpp its `meta.n_ctx`."""
    for entry, context in (({"id": "m", "max_model_len": 2048}, 2048), ({"id": "m", "meta": {"n_ctx": 4096}}, 4096)):
        with FakeOpenAI() as server:
            server.models = [entry]
            found = discover(CommonOptions(endpoints=[parse_endpoint(f"x={server.url}/v1")], local="never", aws=False))
        (backend,) = found.backends
        assert (backend.model_id, backend.max_total_tokens) == ("m", context)


@pytest.mark.parametrize(
    ("models", "said"),
    [
        ([{"id": "a"}, {"id": "b"}], "its server lists 2 models: a, b; name one with --endpoint x=URL,model=ID"),
        ([], "its server lists 0 models; name one with --endpoint x=URL,model=ID"),
    ],
)
def test_a_server_that_lists_several_models_or_none_is_one_line_exit_2(models, said, tmp_path, monkeypatch, capsys):
    with FakeOpenAI() as server:
        server.models = models
        argv = ["runner.bench", "--no-aws", "--local", "never", "--endpoint", f"x={server.url}/v1",
                "--results-dir", str(tmp_path)]  # fmt: skip
        monkeypatch.setattr(sys, "argv", argv)
        with pytest.raises(SystemExit) as stopped:
            bench.main()
        assert server.requests == []  # nothing sent
    assert stopped.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"error: --endpoint x: {said}"
    assert not list(tmp_path.rglob("*.json"))


def test_model_given_is_never_asked_for_and_an_unreachable_server_is_left_to_the_measuring(dead_url):
    with FakeOpenAI() as server:
        found = discover(CommonOptions(endpoints=[parse_endpoint(f"x={server.url}/v1,model=mine")], local="never",
                                       aws=False))  # fmt: skip
        assert "/v1/models" not in server.paths
    assert found.backends[0].model_id == "mine"
    found = discover(CommonOptions(endpoints=[parse_endpoint(f"dead={dead_url}")], local="never", aws=False))
    assert not [n for n in found.notices if n.startswith("dead")]  # its requests say it is unreachable


def test_a_server_without_a_model_list_is_a_note_and_the_requests_go_on(tmp_path):
    with FakeOpenAI() as server:  # a path it does not serve answers 404
        found = discover(CommonOptions(endpoints=[parse_endpoint(f"x={server.url}/nothing-here")], local="never",
                                       aws=False))  # fmt: skip
    (note,) = [n for n in found.notices if n.startswith("x:")]
    assert note.startswith("x: which model it serves is not known (GET /v1/models: HTTP 404: not found)")
    assert note.endswith("requests name 'default': give --endpoint x=URL,model=ID")
