"""A workload on a server's own host (`runner.bench --workload … --in-region`): after its tunnel
row, every level again from the in-region kit, so the difference is the path.

The requests are the runner's own: built by the tunnel row's run (the same tokenizer count, the
same forced lengths, each request's text new, so no level is served from another's prefix
cache), turned into their chat-completions bodies (`ChatRequest.openai_body`) and put in the
run's folder of the stack's evidence bucket, because SendCommand's parameters hold far less than
a level of long prompts; the kit fetches them and sends them as given, a conversation's turns one
after another with the answers so far. The planned levels of an input length go in one Run
Command; each step of a capacity search is one command, since the next step depends on it.

The kit reads the server's own `/metrics` on the host's loopback during the level and the
accelerator's use throughout; the accelerator's readings are cut to the level's timed requests
here, and both are kept beside the level, as the tunnel row keeps its metrics. Each level is graded on the same objectives. A server that is not
ready is one line and no row; a command that fails is its one line for every level not yet
measured, and the other backends go on.
"""

from __future__ import annotations

import json

from runner.cloud.reach.in_region import REDEPLOY, no_instance_reason, row_name, run_in_region
from runner.core.console import console
from runner.core.errors import RunnerError
from runner.core.typed_json import JsonObject
from runner.figures.levels import LevelSummary
from runner.measure.host_rows import (
    accelerator_within,
    add_host_entry,
    kit_metrics,
    kit_record,
    kit_request,
    kit_warm_up,
    server_metrics_of,
)
from runner.measure.load import LoadLevel
from runner.measure.records import ChatRequest, Conversation
from runner.measure.workload_run import Advance, BackendRun

# The kit warms at most this many connections a level, as the runner's asyncio client does.
MOST_WARM_UPS = 64


class NotInRegion(RunnerError):
    """The server could not be run on at all (not ready, no kit): one line, and no row."""


def request_json(request: ChatRequest, model_id: str) -> JsonObject:
    """One request as the kit sends it: its body, and what the record is stamped with."""
    return {
        "body": request.openai_body(model_id),
        "stamp": {
            "target_input_tokens": request.target_input_tokens,
            "target_output_tokens": request.max_tokens,
            "forced_length": request.force_length,
        },
    }


def unit_json(unit: ChatRequest | Conversation, model_id: str) -> JsonObject:
    """A request, or a conversation whose turns each hold only their own user message (the kit
    puts the history so far before it, as the load engine does)."""
    if isinstance(unit, Conversation):
        return {"conversation": [request_json(unit.turn(i, ()), model_id) for i in range(len(unit.prompts))]}
    return request_json(unit, model_id)


def requests_sent(level: LoadLevel, units: list[ChatRequest | Conversation]) -> int:
    """Requests the kit sends for a level, warm-ups included (the command's time limit)."""
    turns = sum(len(u.prompts) if isinstance(u, Conversation) else 1 for u in units)
    return turns + min(level.in_flight, MOST_WARM_UPS)


class HostRun(BackendRun):
    """The tunnel row's workload, on the server's own host, as the row `<backend>@host`."""

    def __init__(self, tunnel: BackendRun, advance: Advance) -> None:
        super().__init__(tunnel.backend, tunnel.plan, tunnel.evidence, advance, row=row_name(tunnel.backend.name))
        self.tunnel = tunnel
        self.counter, self.fitter, self.force = tunnel.counter, tunnel.fitter, tunnel.force
        self.reply_count, self.reply_tokens = tunnel.reply_count, tunnel.reply_tokens
        self.path = "in-region"
        self.added = False
        self.info.path, self.info.forced_output_length = "in-region", self.force
        self.info.token_count = tunnel.info.token_count

    def run(self) -> None:
        plan = self.plan
        # Prompts are built on the backend's count of tokens, which the tunnel row read.
        if plan.workload.synthetic and self.counter is None:
            self.note(
                "not run in the region: its prompt lengths need the count of tokens its tunnel row could not read"
            )
            return
        self.built = self.tunnel.built
        try:
            self.measure_lengths(None)
        except NotInRegion as line:
            if not self.added:
                console.print(f"[yellow]note:[/yellow] {self.backend.name}: {line}")
                self.evidence.notice(f"{self.backend.name}: {line}")
                del self.evidence.file.workload_backends[self.row]  # type: ignore[union-attr]  # this row made it
                return
            self.fail_all(str(line))
        except Exception as error:  # one line for this row; the other backends go on
            self.fail_all(str(error) if isinstance(error, RunnerError) else self.backend.explain(error))

    def not_sent(self, line: str) -> None:
        """A length the model's context cannot hold: the tunnel row said so."""

    def measure_level(self, client, level: LoadLevel) -> LevelSummary:
        """One level in one Run Command (a command that fails or times out loses that level only):
        its requests built here, sent by the kit on the host, its records and readings kept."""
        plan, backend = self.plan, self.backend
        units = self.requests_for(level)
        if not plan.workload.synthetic:
            # A dataset's prompts once each: the kit sends request i as unit i modulo their number.
            units = units[: len(plan.workload.fixed)]
        if self.tunnel.metrics_url:
            self.info.metrics = f"{kit_metrics(backend)['url']} on the server's host"
        config = {
            "repeats": 1,
            "timeout_s": plan.timeout_s,
            "warm_up": kit_warm_up(),
            "levels": [level.to_json()],
            "seed": plan.seed,
            "metrics": kit_metrics(backend) if self.tunnel.metrics_url else None,
        }
        bodies = {"levels": [[unit_json(unit, backend.model_id) for unit in units]]}
        (outcome,) = run_in_region(
            [backend],
            config,
            repeats=requests_sent(level, units),
            timeout_s=plan.timeout_s,
            on_line=lambda line: console.print(f"[dim]{line}[/dim]"),
            requests={backend.name: json.dumps(bodies, separators=(",", ":")).encode()},
        )
        if isinstance(outcome, str):
            raise NotInRegion(outcome.removeprefix(f"{backend.name}: "))
        self.evidence.file.keep_in_region(outcome.entry())
        if not self.added:
            add_host_entry(outcome, self.evidence, accelerator=False)
            self.added = True
        if outcome.problem:
            raise RunnerError(outcome.problem.removeprefix(f"{backend.name}: "))
        result = outcome.result
        assert result is not None  # a run without a problem was read back
        if result.kit < 3:
            raise RunnerError(f"its kit is version {result.kit}, before workloads in the region: {REDEPLOY}")
        self.evidence.file.warm_up.extend(kit_record(w, self.row) for w in result.warm_ups)
        (span,) = result.level_spans or [[0.0, 0.0]]
        (metrics,) = result.server_metrics or [None]
        accelerator = accelerator_within(result.accelerator, span)
        self.advance(level.requests)  # the kit's records come back together, when the level is over
        records = [kit_request(r, self.row) for r in result.records]
        return self.keep_level(level, records, server_metrics_of(metrics), accelerator)


def bench_workload_in_region(tunnel: BackendRun, advance: Advance) -> bool:
    """The in-region row of a server whose tunnel row was just measured (a backend the kit cannot
    run on was refused before anything was measured); False when it got no row at all."""
    assert no_instance_reason(tunnel.backend) is None
    host = HostRun(tunnel, advance)
    host.run()
    return host.added
