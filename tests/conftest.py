"""Fixtures for every tier: loopback only, never real AWS."""

from __future__ import annotations

import os
import signal
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

GUARD_DIR = Path(__file__).with_name("loopback")
sys.path.insert(0, str(GUARD_DIR))
from loopback_guard import LOG_VARIABLE, LoopbackGuard  # noqa: E402

# Ctrl-C is part of what the suite tests: a real SIGINT to a real command. A run started with SIGINT
# ignored (an `&` job of a non-interactive shell, a benchmark harness) hands that on to every child,
# which would then ignore the test's Ctrl-C and hang; the suite's processes get Python's own handler.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# No instance-metadata probes and no real credentials, ever.
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
for name in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
    os.environ.pop(name, None)
os.environ["AWS_CONFIG_FILE"] = os.devnull + ".missing"
os.environ["AWS_SHARED_CREDENTIALS_FILE"] = os.devnull + ".missing"
# The runner draws its tables as wide as stdout's terminal, and, not a terminal, as COLUMNS says
# (xdist's workers set 80; a shell may export anything): the suite reads them at one width, whatever
# the caller's (the tests of the width itself set their own).
os.environ["COLUMNS"] = "200"
# runner.forward's state file: never the project's own (a developer's open forwards stay theirs).
os.environ["INFERENCE_FORWARDS_FILE"] = os.path.join(tempfile.mkdtemp(prefix="forwards-"), "forwards.json")
# Loopback only, in this process (the autouse fixture below) and in every Python process a test
# starts (`tests/loopback/sitecustomize.py`), which logs what it tried here. xdist workers keep the
# controller's log, so the controller's session sees every process's attempts.
if not os.environ.get("PYTEST_XDIST_WORKER") or not os.environ.get(LOG_VARIABLE):
    os.environ[LOG_VARIABLE] = os.path.join(tempfile.mkdtemp(prefix="loopback-"), "attempts.log")
if str(GUARD_DIR) not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(GUARD_DIR), os.environ.get("PYTHONPATH")]))
GUARD = LoopbackGuard().install()


@pytest.fixture(autouse=True)
def loopback_only() -> Iterator[LoopbackGuard]:
    """Fails the test that tried to reach anything off loopback (the attempt itself was refused)."""
    GUARD.attempts.clear()
    yield GUARD
    tried, GUARD.attempts[:] = list(GUARD.attempts), []
    if tried:
        pytest.fail(f"tried to leave loopback: {tried}")


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    """moto in server mode on loopback, on the port it bound itself, one per test module (for tests
    that need a few AWS APIs; the emulator tier's own fixture adds what moto lacks)."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    yield f"http://localhost:{server.get_host_and_port()[1]}"
    server.stop()


@pytest.fixture(scope="module")
def moto_s3_url() -> Iterator[str]:
    """moto in server mode on 127.0.0.1 with S3 bucket policies' TLS-only Deny applied as S3 applies
    it (tests/aws_emulator/s3_policies.py), one per test module: for the app's scripts that call
    the real AWS CLI against S3."""
    import logging

    from moto.server import ThreadedMotoServer

    from tests.aws_emulator import s3_policies

    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request would bury a failure
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    undo = s3_policies.install()
    try:
        yield f"http://127.0.0.1:{server.get_host_and_port()[1]}"
    finally:
        undo()
        server.stop()


def pytest_configure(config):
    # In the controlling process only: the vLLM tier's server starts loading now, in the background.
    if not hasattr(config, "workerinput"):
        from tests.vllm.background import start_if_selected

        config.vllm_background = start_if_selected(config)


def pytest_unconfigure(config):
    background = getattr(config, "vllm_background", None)
    if background is not None:
        background.stop()


# tests/cdk's session fixtures over the one synthesis of the app (tests/cdk/conftest.py).
SYNTHESIS = {"synthesized", "assembly", "app_stacks", "templates"}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which turns the groups into node ids
def pytest_collection_modifyitems(config, items):
    """Side by side under xdist (`--dist loadgroup`): the vLLM tier in one group (one worker talks
    to its one server), the emulator tests that share one deployment (`deployed`) in one group
    (moto's state is per process and those tests run in order on it; every other emulator test
    empties its worker's emulator first, so it may run anywhere), the tests of the embedded model in one,
    the tests over tests/cdk's synthesis of the app and of every option in one, the report page's in
    one; every other test goes wherever a worker is free."""
    for item in items:
        path = str(item.fspath).replace("\\", "/")
        if "instances" in getattr(item, "fixturenames", ()):
            # Run Command's commands under sh with the real AWS CLI against moto
            # (tests/runner/in_region_host.py): the stand-in hosts' tier, as the boot scripts are.
            item.add_marker(pytest.mark.host)
        if "/tests/vllm/" in path:
            item.add_marker(pytest.mark.xdist_group("vllm"))
        elif "/tests/emulator/" in path and "deployed" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group(f"emulator-{Path(path).stem}"))
        elif "local_server" in getattr(item, "fixturenames", ()):
            # The embedded model answering for real (llama.cpp and its weights): a tier of its own,
            # as vLLM's is, and one server for it, not one per worker.
            item.add_marker(pytest.mark.llama)
            item.add_marker(pytest.mark.xdist_group("llama-cpp"))
        elif "/tests/cdk/" in path and (
            SYNTHESIS & set(getattr(item, "fixturenames", ())) or path.endswith("/test_options.py")
        ):
            # tests/cdk's one synthesis of the app, and test_options' of every option: made once.
            item.add_marker(pytest.mark.xdist_group("cdk-synthesis"))
        elif path.endswith("/tests/runner/test_html_report.py"):
            item.add_marker(pytest.mark.xdist_group("html-report"))  # its evidence and page, made once
        elif path.endswith("/tests/runner/test_terminal_output.py"):
            item.add_marker(pytest.mark.xdist_group("terminal-output"))  # its three bench runs, made once
    # xdist hands out the groups first, the one with the most tests first (its loadscope reorder,
    # on by default), then the single tests in this order: the emulator's tests (by their marker,
    # wherever their file is: a fleet's copies measured on it last half a minute), the longest,
    # first, then the many short tests that fill the gaps. Stable, so each module keeps its own order.
    # The test that stops the vLLM tier's server comes after every other test of its tier.
    items.sort(
        key=lambda item: (
            0 if item.get_closest_marker("emulator") else 1 if "/tests/vllm/" in str(item.fspath) else 2,
            item.get_closest_marker("stops_the_tier_server") is not None,
        )
    )


def pytest_sessionfinish(session, exitstatus):
    log = Path(os.environ[LOG_VARIABLE])
    if log.is_file() and log.read_text().strip():
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
        print(f"\nA process started by a test tried to leave loopback:\n{log.read_text()}", file=sys.stderr)


@pytest.fixture
def dead_url() -> Iterator[str]:
    """A loopback URL where nothing listens: the port stays bound (never listening) for the test, so
    no other process can take it meanwhile and connections to it are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"


@pytest.fixture(scope="session")
def local_server():
    """The real embedded llama.cpp server, once per session (per worker: its tests share a group).
    Side by side with other tests it gets one thread: two threads on two busy cores spin-wait on
    each other and run several times slower than one."""
    from runner.servers.llama_cpp import LocalServer, LocalServerConfig

    threads = 1 if os.environ.get("PYTEST_XDIST_WORKER") else LocalServerConfig().threads
    server = LocalServer(LocalServerConfig(threads=threads)).start()
    yield server
    server.stop()
