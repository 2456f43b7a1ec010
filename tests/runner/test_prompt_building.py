"""Prompts of a chosen length cost fewer counts of the server's tokenizer: the words per token the
texts fitted so far gave start the next text (four sequential `/tokenize` calls a prompt before,
about 180 ms a prompt on the embedded model, half of a capacity search's time), a count that lands
on the target ends the search, and a shared prefix is fitted once a run; every prompt still has
exactly its length on the server's own count."""

from __future__ import annotations

import httpx

from runner.workloads import Workload, synthetic_turns
from runner.workloads.text import Fitter, fit
from tests.runner.known_server import known, known_server


class Counted:
    """The known-rate server's /tokenize on one user message (as vLLM's counts the chat messages),
    counting the calls."""

    def __init__(self, url: str) -> None:
        self.http = httpx.Client(base_url=url, timeout=10)
        self.calls = 0

    def __call__(self, text: str) -> int:
        self.calls += 1
        messages = [{"role": "user", "content": text}]
        return self.http.post("/tokenize", json={"model": known.MODEL, "messages": messages}).json()["count"]


def test_prompts_take_about_one_count_each_and_keep_their_exact_length():
    with known_server() as server:
        count = Counted(server.url)
        turns = synthetic_turns(Workload(input_tokens=(300,)), 300, 20, 16, Fitter(count))
        built = count.calls
        lengths = [count(turn.prompt) for turn in turns]
    assert lengths == [300] * 20 and len({t.prompt for t in turns}) == 20
    # The first prompt finds the words per token (a few counts), every later one starts on it.
    assert built <= 20 + 4, built


def test_the_fitter_gives_the_texts_fit_gives():
    """Cheaper, not different: the same seed and length give the same text with or without it."""
    with known_server() as server:
        count = Counted(server.url)
        fitter = Fitter(count)
        for target, seed in ((50, 1), (400, 2), (1000, 3), (400, 4)):
            assert fitter.fit(target, seed) == fit(target, count, seed)


def test_a_shared_prefix_is_fitted_once_a_run_not_once_a_level():
    with known_server() as server:
        count = Counted(server.url)
        fitter = Fitter(count)
        workload = Workload(input_tokens=(200,), prefix_tokens=100, prefixes=2)
        first = synthetic_turns(workload, 200, 4, 16, fitter)
        calls = count.calls
        second = synthetic_turns(workload, 200, 4, 16, fitter, first=4)
        later = count.calls - calls
        assert [count(t.prompt) for t in first + second] == [200] * 8
    assert {t.prompt[:60] for t in first} == {t.prompt[:60] for t in second}  # the same two prefixes
    assert later <= 4 + 2, later  # the second level's four prompts, not its prefixes again
