"""What every command shares: common flags, backend discovery, the embedded server, evidence."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from rich.markup import escape

from catalog import CatalogError
from runner.cli.options import CommonOptions, options_from_args
from runner.cloud.aws import credentials_configured
from runner.cloud.outputs import OutputsReading, parse_outputs, read_outputs_file, read_stack_outputs
from runner.cloud.reach.forwards_file import Forward, forwards_file, live_forwards
from runner.core.backend_entries import BackendEntry
from runner.core.backends import (
    Backend,
    bedrock_backend,
    endpoint_backend,
    from_output,
    local_backend,
    select,
)
from runner.core.console import console
from runner.core.errors import RunnerError, backend_down, describe
from runner.core.evidence import EmbeddedServer, Evidence, EvidenceFile, F, StackOutputs
from runner.core.typed_json import JsonObject, to_json
from runner.render.tables import print_report
from runner.servers.llama_cpp import CAVEAT, MODEL_ALIAS, LocalServer, LocalServerConfig


@dataclass
class Discovery:
    backends: list[Backend]
    notices: list[str]
    outputs: OutputsReading | None
    local_server: LocalServer | None = None
    # Whether this run may call AWS at all (credentials configured or --aws, and not --no-aws).
    aws: bool = False


def discover(options: CommonOptions) -> Discovery:
    """Everything deployed or named, then the embedded model if nothing else is there."""
    notices: list[str] = []
    outputs: OutputsReading | None = None
    use_aws = options.aws if options.aws is not None else credentials_configured()
    forwarded = open_forwards(notices)
    if options.outputs_file:
        outputs = read_outputs_file(options.outputs_file)
    elif use_aws:
        outputs = read_stack_outputs(options.region)
    elif forwarded:
        # No AWS call: the servers runner.forward opened carry the stack outputs they were opened for.
        outputs = forwarded_outputs(forwarded)
    else:
        notices.append("no AWS credentials configured: stack outputs and Bedrock skipped (--aws to force)")
    found: list[Backend] = []
    ports = {f.backend: f.local_port for f in forwarded} | options.forwards
    if outputs is not None:
        notices.extend(outputs.problems)
        for output in outputs.backends:
            try:
                backend = from_output(output, ports)
            except (RunnerError, CatalogError) as error:
                notices.append(str(error))
                continue
            forward = next((f for f in forwarded if f.backend == output.name), None)
            if forward is not None and output.name not in options.forwards:
                backend.notes.append(f"forwarded by runner.forward (pid {forward.pid}, {forward.instance_id})")
            found.append(backend)
    deployed = bool(found)
    for flag in options.endpoints:
        existing = next((b for b in found if b.name == flag.name), None)
        replacement = endpoint_backend(flag, existing)
        if flag.model_id is None and replacement.spec is None:
            ask_served_model(replacement, notices)
        found = [b for b in found if b.name != flag.name] + [replacement]
    if use_aws:
        found.append(bedrock_backend())
    else:
        # Listed, never called: building its AWS client would already probe for credentials.
        why = "with --no-aws" if options.aws is False else "without AWS credentials (configure them, or pass --aws)"
        for backend in found:
            if backend.aws_api:
                backend.blocked = f"not reachable {why}: {backend.kind.value} is called through the AWS API"

    wanted = options.backends
    extra = {flag.name for flag in options.endpoints}
    selected = select(found, [w for w in wanted if w != "local"] if wanted else None, extra)
    if wanted:
        for name in wanted:
            if name != "local" and name not in {b.name for b in selected}:
                notices.append(f"backend {name} was asked for but is not deployed or configured")
    want_local = (
        options.local == "always"
        or (wanted is not None and "local" in wanted)
        or (options.local == "auto" and wanted is None and not deployed and not options.endpoints)
    )
    if options.local == "never":
        want_local = False
    server = None
    if want_local:
        config = LocalServerConfig(startup_timeout_s=120.0)
        if options.threads:
            config.threads = options.threads
        console.print(f"[dim]starting the embedded model ({config.threads} threads) …[/dim]")
        server = LocalServer(config).start()
        notices.append(f"{CAVEAT}; started in {server.startup_s:.1f} s")
        selected.append(local_backend(server.base_url, MODEL_ALIAS, server.config.context_tokens))
    return Discovery(backends=selected, notices=notices, outputs=outputs, local_server=server, aws=use_aws)


def ask_served_model(backend: Backend, notices: list[str]) -> None:
    """An `--endpoint` without `model=`: the one model its server lists (`GET /v1/models`), with
    its context where the listing gives it. Several models or none is one line (name one with
    `model=`); a server that cannot be reached is left to the measuring, which says so; a listing
    that fails otherwise is a note, and the requests name `default`."""
    from runner.measure.served import served_models

    try:
        models = served_models(backend.base_url or "")
    except Exception as error:
        if not backend_down(error):
            notices.append(
                f"{backend.name}: which model it serves is not known (GET /v1/models: {describe(error)}); "
                f"requests name {backend.model_id!r}: give --endpoint {backend.name}=URL,model=ID"
            )
        return
    if len(models) != 1:
        listed = f": {', '.join(m.id for m in models[:5])}{' …' if len(models) > 5 else ''}" if models else ""
        raise RunnerError(
            f"--endpoint {backend.name}: its server lists {len(models)} models{listed}; "
            f"name one with --endpoint {backend.name}=URL,model=ID"
        )
    (model,) = models
    backend.model_id = model.id
    backend.max_total_tokens = backend.max_total_tokens or model.context_tokens
    backend.notes.append(f"model {model.id}: the one its server lists (GET /v1/models)")


def open_forwards(notices: list[str]) -> list[Forward]:
    """The forwards runner.forward left running; an unreadable state file is a notice, not a stop."""
    try:
        return live_forwards()
    except RunnerError as error:
        notices.append(str(error))
        return []


def forwarded_outputs(forwarded: list[Forward]) -> OutputsReading:
    from catalog.contract import output_key

    return parse_outputs({"runner.forward": {output_key(f.backend): f.output for f in forwarded}}, str(forwards_file()))


@contextlib.contextmanager
def run_session(command: str, args: argparse.Namespace, config: JsonObject) -> Iterator[tuple[Discovery, Evidence[F]]]:
    """Discover backends, open evidence (the command's file class, `EvidenceFile.of(command)`), and
    always stop the embedded server and save evidence."""
    options = options_from_args(args)
    evidence: Evidence[F] = Evidence(command, config | {"common": to_json(options)}, options.results_dir)
    discovery = discover(options)
    try:
        for line in discovery.notices:
            console.print(f"[yellow]note:[/yellow] {line}")
            evidence.notice(line)
        evidence.file.backends = [BackendEntry.of(b) for b in discovery.backends]
        if discovery.outputs:
            evidence.file.stack_outputs = StackOutputs(discovery.outputs.source, discovery.outputs.raw)
        server = discovery.local_server
        if server is not None:
            model = server.model_path.name if server.model_path else None
            evidence.file.local_server = EmbeddedServer(server.startup_s, server.config.threads, model)
        if not discovery.backends:
            raise RunnerError("nothing to measure: no backend selected, deployed or configured")
        yield discovery, evidence
    finally:
        if discovery.local_server is not None:
            discovery.local_server.stop()


def run_command(
    command: str,
    args: argparse.Namespace,
    config: JsonObject,
    measure: Callable[[Discovery, Evidence[F]], None],
    *,
    measured: Callable[[F], bool],
    baseline: EvidenceFile | None = None,
) -> int:
    """What every measuring command shares: discover the backends, `measure` them, and conclude;
    Ctrl-C stops the measuring, saves what was measured and goes on up as KeyboardInterrupt.

    `measured(file)` decides the exit status: 0 when it holds, 1 when nothing counted.
    """
    with run_session(command, args, config) as (discovery, evidence):
        interrupted = False
        try:
            measure(discovery, evidence)
        except KeyboardInterrupt:
            interrupted = True
        return conclude(evidence, interrupted=interrupted, measured=measured(evidence.file), baseline=baseline)


def conclude(evidence: Evidence[F], *, interrupted: bool, measured: bool, baseline: EvidenceFile | None = None) -> int:
    """Save the evidence, print its table, say where it is; Ctrl-C goes on up once saved.

    Exit status: 0 when anything was measured, 1 when nothing could be (or the evidence could not
    be written).
    """
    evidence.finish(interrupted=interrupted)
    print_report(evidence.file, baseline=baseline, notices=False)
    evidence.announce(interrupted=interrupted)
    return 0 if measured else 1


# What stops a command the way Ctrl-C does: a CI's cancel or `timeout` (SIGTERM), a closed terminal (SIGHUP).
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextlib.contextmanager
def stop_signals_as_ctrl_c() -> Iterator[None]:
    """SIGTERM and SIGHUP stop a command as Ctrl-C does: what was measured is saved, the embedded
    server is stopped, exit 130. Each is handed on as a SIGINT, so whatever takes Ctrl-C at that
    moment takes it (asyncio's runner cancels its task, and a level in progress keeps what
    finished; elsewhere KeyboardInterrupt); where SIGINT is ignored, KeyboardInterrupt is raised."""

    def as_ctrl_c(_signum: int, _frame: Any) -> None:
        if callable(signal.getsignal(signal.SIGINT)):
            signal.raise_signal(signal.SIGINT)
        else:
            raise KeyboardInterrupt

    saved = {}
    with contextlib.suppress(ValueError):  # not the main thread: signals stay as they are
        saved = {name: signal.signal(name, as_ctrl_c) for name in STOP_SIGNALS}
    try:
        yield
    finally:
        for name, handler in saved.items():
            signal.signal(name, handler)


def main_guard(run: Callable[[], int]) -> None:
    """Expected faults print one line and exit 2 (1 for evidence that could not be written); Ctrl-C,
    SIGTERM and SIGHUP exit 130 after the command saved its evidence."""
    try:
        with stop_signals_as_ctrl_c():
            code = run()
    except (RunnerError, CatalogError) as error:
        console.print(f"[red]error:[/red] {escape(str(error))}")  # a message's [brackets] are not markup
        code = error.exit_status if isinstance(error, RunnerError) else 2
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/yellow]")
        end_now_if_work_is_still_out(130)
        code = 130
    sys.exit(code)


def end_now_if_work_is_still_out(code: int) -> None:
    """After a stop, with the evidence saved and the embedded server stopped: threads still out (an
    agent task's model call on Strands' own thread, a blocking request on a level's pool) would hold
    the exit until they end, up to their timeouts, since Python waits for them (a pool's threads
    even when they are daemons). End at once, when the runner is the program (`python -m runner.…`):
    a caller that runs a command in its own process (a test) keeps its process."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is None or spec.name.split(".")[0] != "runner":
        return
    if any(t is not threading.main_thread() and t.is_alive() for t in threading.enumerate()):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
