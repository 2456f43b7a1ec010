"""The real AWS CLI for the emulated hosts and builds, started once: a fork server ("zygote").

Every `aws` call a boot script or a buildspec makes costs about 0.45 s of CPU when it starts a
Python of its own, two thirds of it importing awscli and botocore. This server imports them once
(`awscli.clidriver` and `awscli.handlers`, the modules every command loads, nothing else) and
forks a child per call; the child takes the caller's argv, whole environment, working directory,
umask and standard input, output and error (the file descriptors themselves, passed over a unix
socket with SCM_RIGHTS), and then runs the real `awscli.clidriver.main()`: the driver, its botocore
session, credentials, the service models and every request are made in the child, from the
caller's environment, as in a CLI process of its own; nothing a call makes outlives it, and each
child starts from the server's state as it was before any call. What `awscli/__init__.py` and the
`aws` script do with the environment at import time (AWS_DATA_PATH, LC_CTYPE) is done again in
the child with the caller's. The model files of the services the hosts call (PARSED_SERVICES) are
parsed once in the server too, and a call's loader is answered from that parse for the same path
(0.18 → 0.12 CPU-s a call, over 40 ssm and ecr calls); what botocore writes into a loaded model
it writes the same every time, and a child writes only its own copy.

The hosts' own Python stand-ins for docker and systemctl (STAND_INS) are served the same way: a
request naming a `module` runs that module as `python -m MODULE` would, imported afresh in the
child with the caller's environment (their shims run `stand_in_client.py`); boto3, which the
docker stand-in's registry calls import, is imported here once too.

`tests/host/bin/aws` is the caller (it runs `aws_client.py`): first on a host's PATH, it hands its call to the server named
by AWS_CLI_SERVER (and runs the real CLI itself when there is none), forwards the signals it gets
(`timeout`, a host's shutdown), and exits as the child did (its code, or killed by its signal).
The child is killed when its caller dies. Started from the test process, the server carries the
loopback guard (`tests/loopback/sitecustomize.py`), and so does every child.

Protocol, one connection per call: the caller sends a 4-byte big-endian length and a JSON request
({"argv", "env", "cwd", "umask", "fds": which of 0, 1, 2 it has open, "ignored": the signals it
was started with ignored, and "module" for a stand-in}) with its fds 0, 1 and 2 attached to the
first bytes, then one
line "signal N" per signal it is to forward; the server answers {"pid": N} once forked, then
{"exit": CODE} or {"signal": N}.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import selectors
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.host.aws_client import FORWARDED  # the signals a caller forwards

SOCKET_ENV = "AWS_CLI_SERVER"
# `off`: no server; every call starts a CLI process of its own (to compare, or to rule it out).
SWITCH_ENV = "INFERENCE_AWS_CLI_SERVER"
CLI_SCRIPT = Path(sys.executable).with_name("aws")
# The hosts' own Python stand-ins that their shims (tests/host/bin/docker, systemctl) hand here
# through tests/host/stand_in_client.py: a pull, a push, a unit enabled or stopped, each about
# 0.06-0.45 CPU-s as a Python of its own (boto3's import for the registry's calls), a fork here.
STAND_INS = frozenset({"tests.host.docker", "tests.host.systemd"})
SERVER_MODULES = frozenset({"tests.host.aws_cli", "tests.host.aws_client"})


def cli_stdio(present: list[int]) -> None:
    """Standard streams as a new Python process makes them (UTF-8 here, errors as CPython sets
    them; None for one the caller had closed)."""
    sys.stdin = open(0, encoding="utf-8", errors="surrogateescape", closefd=False) if 0 in present else None  # noqa: SIM115
    sys.stdout = open(1, "w", encoding="utf-8", errors="surrogateescape", closefd=False) if 1 in present else None  # noqa: SIM115
    if sys.stdout is not None and sys.stdout.isatty():
        sys.stdout.reconfigure(line_buffering=True)
    sys.stderr = (
        open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1) if 2 in present else None  # noqa: SIM115
    )
    sys.__stdin__, sys.__stdout__, sys.__stderr__ = sys.stdin, sys.stdout, sys.stderr


def cli_environment(env: dict[str, str]) -> None:
    """The caller's environment, then what the CLI's own start-up does with it."""
    import awscli

    os.environ.clear()
    os.environ.update(env)
    # The `aws` script's first lines.
    if os.environ.get("LC_CTYPE", "") == "UTF-8":
        os.environ["LC_CTYPE"] = "en_US.UTF-8"
    # awscli/__init__.py, at import: its data folder after the caller's AWS_DATA_PATH.
    paths = []
    if "AWS_DATA_PATH" in os.environ:
        paths = [os.path.expanduser(os.path.expandvars(p)) for p in os.environ["AWS_DATA_PATH"].split(os.pathsep)]
    paths.append(os.path.join(os.path.dirname(os.path.abspath(awscli.__file__)), "data"))
    os.environ["AWS_DATA_PATH"] = os.pathsep.join(paths)
    time.tzset()


def exit_code(code: object) -> int:
    """What the interpreter makes of `sys.exit(code)`."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def cli_main(request: dict) -> Callable[[], object]:
    """The real CLI's main, as `aws ARGV` would run it."""
    import awscli.clidriver

    cli_environment(request["env"])
    sys.argv = [str(CLI_SCRIPT), *request["argv"]]
    sys.path[0] = str(CLI_SCRIPT.parent)  # a script's folder, not the server's
    return awscli.clidriver.main


def stand_in_main(request: dict) -> Callable[[], object]:
    """A host stand-in as `python -m MODULE ARGV` would run it: the module imported afresh (the
    stand-ins read their host's HOST_STATE, INFERENCE_ROOT and time scale at import), as
    `__main__`, in the caller's environment."""
    import runpy

    module = request["module"]
    if module not in STAND_INS:
        print(f"{sys.executable}: not a host stand-in: {module}", file=sys.stderr)
        return lambda: 1
    os.environ.clear()
    os.environ.update(request["env"])
    time.tzset()
    for name in [m for m in sys.modules if m.startswith("tests.host.") and m not in SERVER_MODULES]:
        del sys.modules[name]
    sys.argv = [module, *request["argv"]]
    return lambda: runpy.run_module(module, run_name="__main__", alter_sys=True)


def run_call(request: dict) -> int:
    """In the forked child: the call (the CLI, or a stand-in) as a process of its own would run it."""
    import atexit
    import traceback

    os.chdir(request["cwd"])
    os.umask(request["umask"])
    main = stand_in_main(request) if request.get("module") else cli_main(request)
    cli_stdio(request.get("fds", [0, 1, 2]))
    try:
        code = exit_code(main())
    except SystemExit as stop:
        code = exit_code(stop.code)
    except KeyboardInterrupt:
        code = 128 + signal.SIGINT
    except BaseException:  # what an uncaught exception does to a Python process
        traceback.print_exc()
        code = 1
    # The interpreter's own shutdown: threads joined, exit functions run, streams flushed.
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            with contextlib.suppress(Exception):
                stream.flush()
    return code


class Call:
    """One caller and its child, as the server tracks them."""

    def __init__(self, conn: socket.socket, pid: int) -> None:
        self.conn: socket.socket | None = conn
        self.pid = pid
        self.pidfd = os.pidfd_open(pid)
        self.pending = b""

    def answer(self, message: dict) -> None:
        if self.conn is not None:
            with contextlib.suppress(OSError):
                self.conn.sendall(json.dumps(message).encode() + b"\n")

    def kill(self, sig: int) -> None:
        with contextlib.suppress(ProcessLookupError, OSError):
            signal.pidfd_send_signal(self.pidfd, sig)


def receive_request(conn: socket.socket) -> tuple[dict, list[int], bytes]:
    """A caller's request, the file descriptors that came with it, and what it sent after it (its
    first `signal N` lines may come in the same read). The descriptors are closed if the request
    never comes whole: held, a caller's stdout pipe would never reach its reader's EOF."""
    conn.settimeout(10)
    fds = array.array("i")
    try:
        data, ancillary, _flags, _addr = conn.recvmsg(65536, socket.CMSG_SPACE(3 * fds.itemsize))
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
        while len(data) < 4 or len(data) < 4 + struct.unpack(">I", data[:4])[0]:
            more = conn.recv(65536)
            if not more:
                raise ConnectionError("the caller left before its request was whole")
            data += more
        (size,) = struct.unpack(">I", data[:4])
        request = json.loads(data[4 : 4 + size])
    except BaseException:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        raise
    conn.settimeout(None)
    return request, list(fds), data[4 + size :]


class Server:
    def __init__(self, path: str) -> None:
        self.path = path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(64)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ, ("accept", None))
        self.calls: dict[int, Call] = {}
        self.stopping = False
        self.parent = os.getppid()

    def serve(self) -> None:
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            while not self.stopping and os.getppid() == self.parent:  # it ends with the test process
                for key, _ in self.selector.select(timeout=1):
                    kind, call = key.data
                    if kind == "accept":
                        self.accept()
                    elif kind == "exited":
                        self.reap(call)
                    else:
                        self.read(call)
        finally:  # even on a fault of its own (CliServer.raise_if_ended says it): no call outlives it
            for call in list(self.calls.values()):
                call.kill(signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.unlink(self.path)

    def _stop(self, *_: object) -> None:
        self.stopping = True

    def accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:  # the caller gave up already, or no descriptor is left for it now
            return
        try:
            request, fds, after = receive_request(conn)
        except (OSError, ValueError, ConnectionError):
            conn.close()
            return
        # Signals held from the fork until the child has set its own handlers: one forwarded
        # early (it may have come with the request) then reaches the call as it would a CLI's.
        held = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
        try:
            pid = os.fork()
            if pid == 0:
                self.child(conn, request, fds, held)  # never returns
        except OSError:  # no fork: the caller sees its connection end, as a CLI that could not start
            conn.close()
            return
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            for fd in fds:
                os.close(fd)
        call = Call(conn, pid)
        call.pending = after
        self.calls[pid] = call
        self.selector.register(call.pidfd, selectors.EVENT_READ, ("exited", call))
        self.selector.register(conn, selectors.EVENT_READ, ("caller", call))
        call.answer({"pid": pid})
        self.forward_signals(call)  # any that came with the request

    def child(self, conn: socket.socket, request: dict, fds: list[int], held: set[signal.Signals]) -> None:
        code = 1
        try:
            # Nothing of the server's survives into the call: its sockets closed (as objects, so
            # no stale close can hit a descriptor the CLI opens later), signals as at start-up.
            self.selector.close()
            self.listener.close()
            conn.close()
            for call in self.calls.values():
                os.close(call.pidfd)
                if call.conn is not None:
                    call.conn.close()
            # As the caller's own process would have them: what it ignored stays ignored (as through
            # exec), the rest as a new Python sets them.
            for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2):
                signal.signal(signum, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            for signum in request.get("ignored", []):
                signal.signal(signum, signal.SIG_IGN)
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            # The caller's standard streams, as it had them (one it had closed stays closed).
            received = dict(zip(request.get("fds", [0, 1, 2]), fds, strict=False))
            for target in (0, 1, 2):
                if target in received:
                    os.dup2(received[target], target)
                else:
                    with contextlib.suppress(OSError):
                        os.close(target)
            for fd in fds:
                if fd > 2:
                    os.close(fd)
            code = run_call(request)
        except BaseException:
            import traceback

            with contextlib.suppress(Exception):
                traceback.print_exc()
        finally:
            os._exit(code)

    def read(self, call: Call) -> None:
        if call.conn is None:  # its caller's connection was closed by an event earlier in this batch
            return
        try:
            data = call.conn.recv(4096)
        except OSError:
            data = b""
        if not data:
            # The caller is gone (killed): so is its call, as a CLI process dies with it.
            self.selector.unregister(call.conn)
            call.conn.close()
            call.conn = None
            call.kill(signal.SIGKILL)
            return
        call.pending += data
        self.forward_signals(call)

    def forward_signals(self, call: Call) -> None:
        """The whole `signal N` lines the caller has sent so far (any other line is no request)."""
        while b"\n" in call.pending:
            line, call.pending = call.pending.split(b"\n", 1)
            words = line.split()
            if len(words) == 2 and words[0] == b"signal" and words[1].isdigit() and 0 < int(words[1]) < signal.NSIG:
                call.kill(int(words[1]))

    def reap(self, call: Call) -> None:
        _, status = os.waitpid(call.pid, 0)
        self.selector.unregister(call.pidfd)
        os.close(call.pidfd)
        if os.WIFSIGNALED(status):
            call.answer({"signal": os.WTERMSIG(status)})
        else:
            call.answer({"exit": os.waitstatus_to_exitcode(status)})
        if call.conn is not None:
            self.selector.unregister(call.conn)
            call.conn.close()
            # The same batch of events may still hold its caller's connection (the caller left as
            # the child ended): that event finds it closed and leaves it.
            call.conn = None
        del self.calls[call.pid]


class CliServer:
    """The server as the emulator runs it: started the first time a host or a build needs it (a
    module whose tests boot none pays nothing), in its own session, ending with the test process.
    A subclass names another server module of the same protocol (its socket and switch)."""

    NAME = "aws-cli"
    MODULE = "tests.host.aws_cli"
    SOCKET_ENV = SOCKET_ENV
    SWITCH_ENV = SWITCH_ENV

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        # A unix socket's path has a short limit (108 bytes): a folder of its own under /tmp.
        import tempfile

        self.folder = Path(tempfile.mkdtemp(prefix=f"{self.NAME}-"))
        self.path = str(self.folder / "socket")
        self.log = folder / f"{self.NAME}-server.log"
        self.process: subprocess.Popen | None = None
        self.lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return os.environ.get(self.SWITCH_ENV, "on") != "off"

    def server_env(self) -> dict[str, str]:
        """The server's own environment (each call brings its caller's)."""
        return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}

    def start(self) -> CliServer:
        """Starts it loading; `wait_ready` waits for it."""
        if not self.enabled or self.process is not None:
            return self
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", self.MODULE, self.path],
                env=self.server_env(),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
                cwd=Path(__file__).resolve().parents[2],
            )
        return self

    def wait_ready(self) -> None:
        if not self.enabled:
            return
        assert self.process is not None and self.process.stdout is not None
        if self.process.stdout.readline().strip() != b"ready":
            with contextlib.suppress(RuntimeError):  # said below, with its log
                self.stop()
            raise RuntimeError(f"the {self.NAME} server did not start: {self.log.read_text()[-2000:]}")

    def env(self) -> dict[str, str]:
        """What a caller's environment needs to reach the server (started now if not yet)."""
        if not self.enabled:
            return {}
        with self.lock:
            if self.process is None:
                self.start().wait_ready()
        self.raise_if_ended()
        return {self.SOCKET_ENV: self.path}

    def raise_if_ended(self) -> None:
        """A server that ended on its own fails the test that meets it: its callers would go on
        without it (each runs the real thing itself), and the fault would never show."""
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(
                f"the {self.NAME} server ended on its own (exit status {self.process.returncode}): "
                f"{self.log.read_text(errors='replace')[-2000:]}"
            )

    def stop(self) -> None:
        """Ends it; raises (after the clean-up) when it had already ended on its own."""
        ended_early = self.process is not None and self.process.poll() is not None
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None and self.process.stdout is not None:
            self.process.stdout.close()
        with contextlib.suppress(OSError):
            os.unlink(self.path)
        with contextlib.suppress(OSError):
            self.folder.rmdir()
        if ended_early:
            self.raise_if_ended()


# The services the boot scripts, buildspecs and the in-region kit call: their model files are
# parsed here once, before any call (and sdb's, which the CLI reads on every call).
PARSED_SERVICES = ("s3", "ssm", "ecr", "autoscaling", "codebuild", "secretsmanager", "sts", "sdb")
PARSED_DATA = ("endpoints", "partitions", "sdk-default-configuration", "_retry", "cli")


def parse_models_once() -> None:
    """botocore's JSON file loader answers the model files of PARSED_SERVICES from what it parsed
    here (the same bytes' parse, by path); any other file it reads from disk as ever. What
    botocore writes into a loaded model (the sdk-extras merge, `_retry`'s references, partitions'
    formatting) it writes the same each time, and a child writes only its own forked copy."""
    import botocore.exceptions
    import botocore.loaders
    import botocore.session

    parsed: dict[str, object] = {}
    read_from_disk = botocore.loaders.JSONFileLoader.load_file

    def load_file(self: object, file_path: str) -> object:
        if file_path in parsed:
            return parsed[file_path]
        return read_from_disk(self, file_path)

    def remember(self: object, file_path: str) -> object:
        data = read_from_disk(self, file_path)
        if data is not None:
            parsed[file_path] = data
        return data

    botocore.loaders.JSONFileLoader.load_file = remember  # type: ignore[method-assign]
    # A loader as a call's session makes one (botocore's data and awscli's, which importing awscli
    # put on AWS_DATA_PATH), without a session: no configuration or plugin of this user is read.
    loader = botocore.loaders.create_loader(os.environ.get("AWS_DATA_PATH"))
    for name in PARSED_DATA:
        with contextlib.suppress(botocore.exceptions.DataNotFoundError):
            loader.load_data(name)
    for service in PARSED_SERVICES:
        for kind in ("service-2", "paginators-1", "waiters-2", "endpoint-rule-set-1"):
            with contextlib.suppress(botocore.exceptions.DataNotFoundError):
                loader.load_service_model(service, kind)
    botocore.loaders.JSONFileLoader.load_file = load_file  # type: ignore[method-assign]
    keep_per_session_answers()


def keep_per_session_answers() -> None:
    """What botocore works out again for every session (a call makes one), kept for all of them:
    its service listings, made by walking its data folders (a directory listing per service and
    API version, about 400) for each kind of file a call reads, and each event name's alias. Both
    are fixed while the suite runs (the folders do not change; the aliases are botocore's own
    table). A call's own listings are made once before any call, so each child starts with them.
    A call through the server costs 0.043 CPU-s with them, 0.10 without (docs/tests.md)."""
    import contextlib
    import io

    import awscli.clidriver
    import botocore.hooks
    import botocore.loaders

    listed: dict[tuple[tuple[str, ...], str], list[str]] = {}
    list_from_disk = botocore.loaders.Loader.list_available_services

    def list_available_services(self: botocore.loaders.Loader, type_name: str) -> list[str]:
        key = (tuple(self._potential_locations()), type_name)
        if key not in listed:
            listed[key] = list_from_disk(self, type_name)
        return list(listed[key])

    botocore.loaders.Loader.list_available_services = list_available_services  # type: ignore[method-assign]
    # Every session's event aliaser resolves each event name again: one answer per name, kept.
    aliased: dict[str, str] = {}
    aliaser_init = botocore.hooks.EventAliaser.__init__

    def __init__(self: botocore.hooks.EventAliaser, event_emitter: object, event_aliases: object = None) -> None:
        aliaser_init(self, event_emitter, event_aliases)
        if event_aliases is None:
            self._alias_name_cache = aliased

    botocore.hooks.EventAliaser.__init__ = __init__  # type: ignore[method-assign]
    # What a call lists: its command table's services, then its client's waiters, paginators and
    # endpoint rules; by the loader a call's driver makes, so the search paths are a call's own.
    driver = awscli.clidriver.create_clidriver()
    with (
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()),
        contextlib.suppress(SystemExit),
    ):
        driver.main(["--version"])
    loader = driver.session.get_component("data_loader")
    for kind in ("service-2", "waiters-2", "paginators-1", "endpoint-rule-set-1"):
        loader.list_available_services(kind)


def main() -> int:
    (path,) = sys.argv[1:]
    import awscli.clidriver  # what every call imports first
    import awscli.handlers  # noqa: F401  and what its driver loads
    import boto3  # noqa: F401  the docker stand-in's registry calls (tests/host/docker.py)

    parse_models_once()
    server = Server(path)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    server.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main())
