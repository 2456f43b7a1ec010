"""The app's synth for the emulator tier's CDK CLI, run in one warm process ("synth server").

Every `cdk deploy`, `cdk destroy` and `cdk synth` runs the app, and the emulator flows run it
about fifty times: about 2.4 s of CPU each, of which about 2 s start Python, import aws_cdk, start
the jsii runtime (node) and load aws-cdk-lib into it; the synth itself takes about 0.4 s. This
server does the start once and then runs each call's `app.py` as `__main__`, one call at a time,
in the caller's environment, folder and standard streams (the file descriptors themselves, over a
unix socket: tests/host/aws_cli.py's protocol, whose caller `synth_client.py` uses), and answers
its exit status as the interpreter would (`sys.exit(2)`: 2; an uncaught exception: its traceback
and 1). The project's own modules are imported again for every call, so nothing one call imported
or set reaches the next; aws_cdk and the jsii runtime are what stays.

What differs from an app process of its own, and how it is made the same: the jsii runtime keeps
the environment and the folder it started with, so what aws-cdk-lib's App reads from it (the output folder
CDK_OUTDIR and the context CDK_CONTEXT_JSON with its overflow file, which the CLI sets per run)
is given to App from the caller's environment instead (the server starts without them; a
relative output folder made absolute from the caller's folder); the
CDK_ERROR_FILE the CLI may name is not written (the error is on stderr as ever); a signal to the
caller does not stop a synth under way (it ends in under a second). tests/cdk keeps a CLI synth in
a process of its own, and `INFERENCE_SYNTH_SERVER=off` runs every synth that way.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import runpy
import socket
import sys
import traceback
from pathlib import Path

from runner.core.files import PROJECT_ROOT
from tests.host.aws_cli import CliServer, cli_stdio, exit_code, receive_request

SOCKET_ENV = "INFERENCE_SYNTH_SOCKET"
SWITCH_ENV = "INFERENCE_SYNTH_SERVER"
CLIENT = Path(__file__).with_name("synth_client.py")
# What aws-cdk-lib's App reads from the jsii runtime's environment (aws-cdk-lib core/lib/app.js).
APP_ENV = ("CDK_OUTDIR", "CDK_CONTEXT_JSON", "CONTEXT_OVERFLOW_LOCATION_ENV", "CDK_ERROR_FILE")


def project_packages() -> set[str]:
    """The project's own top-level packages (imported again for every call), not the tests'."""
    return {p.name for p in PROJECT_ROOT.iterdir() if (p / "__init__.py").is_file() and p.name != "tests"}


def caller_context() -> dict:
    """The context the CLI gave this call, as App would read it from its environment."""
    context = json.loads(os.environ.get("CDK_CONTEXT_JSON") or "{}")
    overflow = os.environ.get("CONTEXT_OVERFLOW_LOCATION_ENV")
    if overflow:
        context |= json.loads(Path(overflow).read_text())
    return context


@contextlib.contextmanager
def app_reads_the_callers_environment():
    """App's output folder and context from the call's environment (the runtime's is the server's),
    for the length of one call."""
    import aws_cdk

    original = aws_cdk.App.__init__

    @functools.wraps(original)
    def __init__(self, **props):
        # As App does: the constructor's context first, the environment's over it.
        props["context"] = {**(props.get("context") or {}), **caller_context()}
        if props.get("outdir") is None and os.environ.get("CDK_OUTDIR"):
            # The runtime's own folder is the server's: a relative one is the caller's.
            props["outdir"] = str(Path(os.environ["CDK_OUTDIR"]).resolve())
        original(self, **props)

    aws_cdk.App.__init__ = __init__
    try:
        yield
    finally:
        aws_cdk.App.__init__ = original


@contextlib.contextmanager
def as_the_caller(request: dict, fds: list[int]):
    """The caller's environment, folder, argv and standard streams for the length of one call."""
    saved_env, saved_cwd, saved_argv, saved_path = dict(os.environ), os.getcwd(), sys.argv, list(sys.path)
    saved_streams = (sys.stdin, sys.stdout, sys.stderr)
    saved_fds = {target: os.dup(target) for target in (0, 1, 2)}
    received = dict(zip(request.get("fds", [0, 1, 2]), fds, strict=False))
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        for target in (0, 1, 2):
            os.dup2(received.get(target, devnull), target)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        app = Path(request["argv"][0]).resolve()
        sys.argv = [str(app), *request["argv"][1:]]
        sys.path[0] = str(app.parent)  # a script's folder, as `python app.py` has it
        cli_stdio([0, 1, 2])
        yield app
    finally:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        sys.__stdin__, sys.__stdout__, sys.__stderr__ = saved_streams
        for target, saved in saved_fds.items():
            os.dup2(saved, target)
            os.close(saved)
        for fd in (*fds, devnull):
            os.close(fd)
        os.environ.clear()
        os.environ.update(saved_env)
        os.chdir(saved_cwd)
        sys.argv, sys.path[:] = saved_argv, saved_path


def run_app(request: dict, fds: list[int], fresh: set[str] | frozenset[str] = frozenset()) -> int:
    """One call: its app as `__main__`, the packages named in `fresh` imported afresh (the
    server's: the project's; a test process keeps its own)."""
    for name in [m for m in sys.modules if m.split(".", 1)[0] in fresh]:
        del sys.modules[name]
    # App patched first: importing aws_cdk starts the jsii runtime, which must take this process's
    # environment, never a caller's (it would keep that call's context and output folder for good).
    with app_reads_the_callers_environment(), as_the_caller(request, fds) as app:
        try:
            runpy.run_path(str(app), run_name="__main__")
            return 0
        except SystemExit as stop:
            return exit_code(stop.code)
        except Exception:  # what an uncaught error does to a Python process (Ctrl-C goes on up)
            traceback.print_exc()
            return 1


def serve(path: str) -> None:
    import aws_cdk  # noqa: F401  the import and the jsii runtime's start, once

    packages = project_packages()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # the pipe the parent read "ready" from
    parent = os.getppid()
    listener.settimeout(1)
    while os.getppid() == parent:  # it ends with the test process
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        with conn:
            try:
                request, fds, _signals = receive_request(conn)  # a synth is not stopped by a signal
            except (OSError, ValueError, ConnectionError):
                continue
            code = run_app(request, fds, packages)
            with contextlib.suppress(OSError):
                conn.sendall(json.dumps({"exit": code}).encode() + b"\n")


class SynthServer(CliServer):
    """Started the first time an emulator module needs it, one per test process."""

    NAME = "synth"
    MODULE = "tests.emulator.synth_server"
    SOCKET_ENV = SOCKET_ENV
    SWITCH_ENV = SWITCH_ENV

    def server_env(self) -> dict[str, str]:
        return {k: v for k, v in super().server_env().items() if k not in APP_ENV}

    def app_command(self) -> str:
        """cdk.json's `app` for the emulator's CLI folder: the caller, which hands the run to this
        server (or, off or not listening, runs the app itself)."""
        app = PROJECT_ROOT / "app.py"
        return f"{sys.executable} -I -S {CLIENT} {app}" if self.enabled else f"{sys.executable} {app}"


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve(sys.argv[1])
