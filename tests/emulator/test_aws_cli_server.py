"""The AWS CLI server of the emulated hosts (tests/host/aws_cli.py): a call through it answers as
the real CLI in a process of its own answers (output, errors, exit status, standard input, the
caller's environment and folder), signals and a dying caller end the call as they end a CLI
process, nothing of one call reaches the next, and the loopback guard holds in every call."""

from __future__ import annotations

import array
import contextlib
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.host.aws_cli import SOCKET_ENV, CliServer
from tests.host.machine import BIN
from tests.loopback.loopback_guard import LOG_VARIABLE

pytestmark = pytest.mark.emulator


@pytest.fixture(scope="module")
def guard_log(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("guard") / "attempts.log"


@pytest.fixture(scope="module")
def cli_server(tmp_path_factory, guard_log):
    # Its own guard log: the refusal this module provokes on purpose must not fail the session.
    saved = os.environ.get(LOG_VARIABLE)
    os.environ[LOG_VARIABLE] = str(guard_log)
    try:
        server = CliServer(tmp_path_factory.mktemp("cli-server")).start()
        server.wait_ready()
    finally:
        os.environ[LOG_VARIABLE] = saved or ""
    yield server
    server.stop()


def host_env(url: str, home: Path, **extra: str) -> dict[str, str]:
    """As an emulated host has it (tests/host/machine.py), the shim first on PATH."""
    return {
        "PATH": os.pathsep.join([str(BIN), str(Path(sys.executable).parent), "/usr/bin:/bin"]),
        "HOME": str(home),
        "HOST_PYTHON": sys.executable,
        "LANG": "C.UTF-8",
        "AWS_ENDPOINT_URL": url,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    } | extra


def bash(script: str, env: dict[str, str], cwd: Path) -> tuple[int, str, str]:
    result = subprocess.run(
        ["bash", "-c", script], check=False, env=env, cwd=cwd, capture_output=True, text=True, timeout=60
    )
    return result.returncode, result.stdout, result.stderr


SCRIPTS = [
    "aws ssm put-parameter --name /cli/a --type String --overwrite --value 'first value'",
    "aws ssm get-parameter --name /cli/a --query Parameter.Value --output text",
    "aws ssm get-parameter --name /cli/missing",  # a service error: its message and exit status
    "x=$(aws ecr get-login-password) && echo ${#x}",
    "AWS_DEFAULT_OUTPUT=text aws ssm get-parameter --name /cli/a --query Parameter.Type",
    "aws ssm get-parameter --name /cli/a --query Parameter.Name --output text >&-",  # no stdout at all
    "aws --version",  # the exec-env the readiness writes are told apart by
    # Standard input and output streamed (s3's transfer threads): in through stdin, back to stdout.
    "aws s3 mb s3://cli-bucket >/dev/null && echo hello | aws s3 cp - s3://cli-bucket/f.txt"
    " && aws s3 cp s3://cli-bucket/f.txt - && aws s3 rb s3://cli-bucket --force >/dev/null",
]


def reset(url: str) -> None:
    import urllib.request

    urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST"), timeout=30).read()


def test_each_call_answers_as_the_real_cli_in_a_process_of_its_own(cli_server, moto_url, tmp_path):
    answers = {}
    for mode, extra in (("process", {}), ("server", cli_server.env())):
        reset(moto_url)  # the same account for both
        folder = tmp_path / mode
        folder.mkdir()
        env = host_env(moto_url, folder, AWS_EXECUTION_ENV="inference-server", **extra)
        answers[mode] = [bash(script, env, folder) for script in SCRIPTS]
    for script, process, served in zip(SCRIPTS, answers["process"], answers["server"], strict=True):
        assert served == process, script
    assert answers["server"][2][0] == 255 and "ParameterNotFound" in answers["server"][2][2]
    assert answers["server"][5][0] == 255  # as the real CLI: it cannot write its answer
    assert "exec-env/inference-server" in answers["server"][6][1]
    assert answers["server"][7] == (0, "hello\n", "")


def test_a_call_takes_the_callers_environment_and_leaves_nothing_for_the_next(cli_server, moto_url, tmp_path):
    env = host_env(moto_url, tmp_path, **cli_server.env())
    bash("aws ssm put-parameter --name /cli/region --type String --overwrite --value east", env, tmp_path)
    west = env | {"AWS_REGION": "us-west-2", "AWS_DEFAULT_REGION": "us-west-2"}
    code, _, err = bash("aws ssm get-parameter --name /cli/region", west, tmp_path)
    assert code == 255 and "ParameterNotFound" in err  # the caller's region, not the last call's
    code, out, _ = bash("aws ssm get-parameter --name /cli/region --query Parameter.Value", env, tmp_path)
    assert (code, out) == (0, '"east"\n')  # JSON again: the last call's AWS_DEFAULT_OUTPUT is gone
    bad = env | {"AWS_SECRET_ACCESS_KEY": "", "AWS_ACCESS_KEY_ID": ""}
    code, _, err = bash("aws ssm get-parameter --name /cli/region", bad, tmp_path)
    assert code == 255 and "Unable to locate credentials" in err  # no session kept from an earlier call


STAND_IN_SCRIPTS = [
    'mkdir -p "$HOST_STATE" && systemctl is-active inference-server.service',  # a unit never started: `inactive`, exit 3
    "echo secret | docker login --password-stdin 123456789012.dkr.ecr.us-east-1.amazonaws.com",
    "docker pull 123456789012.dkr.ecr.us-east-1.amazonaws.com/inference-survey/missing:v1",  # not in ECR
    "docker logs never-ran; docker frobnicate",  # nothing logged; a verb not emulated: one line, 1
    'cat "$HOST_STATE/calls.log"',  # each call logged in its own host's state folder
]


def test_the_hosts_stand_ins_answer_through_the_server_as_in_a_process_of_their_own(cli_server, moto_url, tmp_path):
    """docker and systemctl (tests/host/bin) handed to the server run the stand-in afresh in the
    caller's environment: the same output, errors and exit status, and each call writes into its
    own caller's HOST_STATE (the modules read it at import), not the server's."""
    answers = {}
    for mode, extra in (("process", {}), ("server", cli_server.env())):
        reset(moto_url)
        folder = tmp_path / mode
        folder.mkdir()
        env = host_env(moto_url, folder, HOST_STATE=str(folder / "host"), PYTHONPATH=str(BIN.parents[2]), **extra)
        answers[mode] = [bash(script, env, folder) for script in STAND_IN_SCRIPTS]
    for script, process, served in zip(STAND_IN_SCRIPTS, answers["process"], answers["server"], strict=True):
        assert served == process, script
    served = answers["server"]
    assert served[0] == (3, "inactive\n", "")
    assert served[1] == (0, "Login Succeeded\n", "")
    assert served[2][0] == 1 and "manifest unknown" in served[2][2]
    assert served[3] == (1, "", "docker stand-in: frobnicate is not emulated\n")
    assert served[4][1].splitlines()[0] == "systemctl is-active inference-server.service"
    # A module that is no stand-in is refused in one line.
    env = host_env(moto_url, tmp_path, **cli_server.env())
    client = BIN.parent / "stand_in_client.py"
    code, _, err = bash(f"{sys.executable} -I -S {client} os.path x", env, tmp_path)
    assert code == 1 and err == f"{sys.executable}: not a host stand-in: os.path\n"


@contextlib.contextmanager
def in_flight() -> Iterator[tuple[socket.socket, str]]:
    """An endpoint that accepts and never answers: a call to it waits until it is stopped."""
    with socket.create_server(("127.0.0.1", 0)) as hole:
        hole.settimeout(30)
        yield hole, f"http://127.0.0.1:{hole.getsockname()[1]}"


def children(server: CliServer) -> list[str]:
    assert server.process is not None
    found = subprocess.run(["pgrep", "-P", str(server.process.pid)], check=False, capture_output=True, text=True)
    return found.stdout.split()


@pytest.mark.parametrize("mode", ["process", "server"])
def test_timeout_ctrl_c_and_a_killed_caller_end_the_call(cli_server, tmp_path, mode):
    served = cli_server.env() if mode == "server" else {}
    slow = "aws ssm get-parameter --name /x --cli-read-timeout 60"
    with in_flight() as (hole, url):
        started = time.monotonic()
        assert bash(f"timeout 1 {slow}; echo $?", host_env(url, tmp_path, **served), tmp_path)[1] == "124\n"
        assert time.monotonic() - started < 15
    for ignored in (False, True):
        with in_flight() as (hole, url):
            # As a shell would start it: Ctrl-C caught, or ignored from the start (as a background
            # job's is, and as an xdist worker's children have it).
            handler = signal.SIG_IGN if ignored else signal.SIG_DFL
            call = subprocess.Popen(
                slow.split(),
                env=host_env(url, tmp_path, **served),
                stderr=subprocess.DEVNULL,
                preexec_fn=lambda handler=handler: signal.signal(signal.SIGINT, handler),
            )
            hole.accept()  # the request is in flight
            call.send_signal(signal.SIGINT)
            if not ignored:
                assert call.wait(timeout=15) == 130  # KeyboardInterrupt, as the CLI reports it
                continue
            with pytest.raises(subprocess.TimeoutExpired):
                call.wait(timeout=1)
            call.terminate()
            assert call.wait(timeout=15) == -signal.SIGTERM
    with in_flight() as (hole, url):
        call = subprocess.Popen(slow.split(), env=host_env(url, tmp_path, **served), stderr=subprocess.DEVNULL)
        hole.accept()
        assert len(children(cli_server)) == (1 if served else 0)
        call.kill()
        call.wait(timeout=15)
        deadline = time.monotonic() + 10
        while children(cli_server) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert children(cli_server) == []  # the call died with its caller


def raw_call(path: str, request: dict, fds: list[int]) -> socket.socket:
    """A caller's first steps of tests/host/aws_client.py's protocol: the request and its fds sent."""
    body = json.dumps(request).encode()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    conn.sendmsg([struct.pack(">I", len(body)) + body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])
    return conn


def test_a_caller_leaving_as_its_call_ends_leaves_the_server_serving(cli_server, tmp_path):
    """Both in one batch of the server's events, the child's end first: that once ended the
    server (its callers then ran the CLI themselves, and nothing failed but the checks below)."""
    assert cli_server.process is not None
    path = cli_server.env()[SOCKET_ENV]
    request = {"argv": ["ssm", "get-parameter", "--name", "/x", "--cli-read-timeout", "60"], "cwd": str(tmp_path)}
    request |= {"umask": 0o022, "fds": [0, 1, 2], "ignored": []}
    with open(os.devnull, "r+b") as null, in_flight() as (hole, url):
        conn = raw_call(path, request | {"env": host_env(url, tmp_path)}, [null.fileno()] * 3)
        child = json.loads(conn.makefile().readline())["pid"]
        hole.accept()  # the call is in flight
        os.kill(cli_server.process.pid, signal.SIGSTOP)
        try:
            os.kill(child, signal.SIGKILL)  # the child ends ...
            deadline = time.monotonic() + 10
            while Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                assert time.monotonic() < deadline
                time.sleep(0.01)
            conn.close()  # ... and then its caller goes, before the server sees either
        finally:
            os.kill(cli_server.process.pid, signal.SIGCONT)
    with open(os.devnull, "r+b") as null:
        conn = raw_call(
            path,
            request | {"argv": ["--version"], "env": host_env("http://127.0.0.1:9", tmp_path)},
            [null.fileno()] * 3,
        )
        with conn, conn.makefile() as answers:
            assert "pid" in json.loads(answers.readline())
            assert json.loads(answers.readline()) == {"exit": 0}
    assert cli_server.process.poll() is None


def test_a_caller_leaving_mid_request_gets_its_descriptors_back_and_a_signal_sent_with_it_is_kept(cli_server, tmp_path):
    """Held by the server, a caller's stdout pipe would never reach its reader's EOF (a boot
    script's `$(aws ...)` would hang); a `signal N` line in the request's own read is no less one."""
    path = cli_server.env()[SOCKET_ENV]
    read_end, write_end = os.pipe()
    try:
        body = json.dumps({"argv": ["--version"], "env": {}, "cwd": str(tmp_path)}).encode()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
        whole = struct.pack(">I", len(body)) + body
        conn.sendmsg([whole[:-1]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [write_end] * 3))])
        os.close(write_end)
        write_end = -1
        conn.close()  # gone before the request was whole
        ready, _, _ = select.select([read_end], [], [], 10)
        assert ready and os.read(read_end, 1) == b""  # EOF: no copy of the write end is left open
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)
    request = {"argv": ["ssm", "get-parameter", "--name", "/x", "--cli-read-timeout", "60"], "cwd": str(tmp_path)}
    request |= {"umask": 0o022, "fds": [0, 1, 2], "ignored": []}
    with open(os.devnull, "r+b") as null, in_flight() as (_, url):
        body = json.dumps(request | {"env": host_env(url, tmp_path)}).encode()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        conn.connect(path)
        message = struct.pack(">I", len(body)) + body + b"signal 15\n"  # in the same write
        conn.sendmsg([message], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [null.fileno()] * 3))])
        conn.settimeout(15)
        with conn, conn.makefile() as answers:
            assert "pid" in json.loads(answers.readline())
            assert json.loads(answers.readline()) == {"signal": signal.SIGTERM}


def test_the_loopback_guard_holds_in_every_call(cli_server, moto_url, tmp_path, guard_log):
    env = host_env("http://192.0.2.10:80", tmp_path, AWS_MAX_ATTEMPTS="1", **cli_server.env())
    code, _, err = bash("aws ssm get-parameter --name /x --cli-connect-timeout 2", env, tmp_path)
    assert code == 255 and "Could not connect to the endpoint URL" in err
    assert "lookup 192.0.2.10" in guard_log.read_text()  # refused before it could connect


def test_without_a_server_the_shim_runs_the_cli_itself(moto_url, tmp_path):
    env = host_env(moto_url, tmp_path, **{SOCKET_ENV: str(tmp_path / "no-such-socket")})
    code, out, _ = bash("aws ssm describe-parameters --output json", env, tmp_path)
    assert code == 0 and "Parameters" in json.loads(out)


# A caller whose first send is followed, before anything else it does, by a wait for the word of
# the test's server below: the order a loaded machine can give a short call (a quick stand-in's
# whole call over, its connection closed, before its caller's next line runs).
CALLER_HELD_AFTER_ITS_FIRST_SEND = """
import os, socket, sys
sys.path.insert(0, sys.argv[1])
import aws_client
first_send = socket.socket.sendmsg
def held(self, *args):
    sent = first_send(self, *args)
    os.read(int(sys.argv[3]), 1)
    return sent
socket.socket.sendmsg = held
aws_client.hand_over(sys.argv[2], ["build"], lambda: os._exit(99))
"""


def test_a_short_call_that_ends_before_its_caller_writes_again_exits_as_its_child_did(tmp_path):
    """That order once failed a `docker build` that had built: the caller's empty second send got
    EPIPE from the closed connection, and it exited 1 with a traceback instead of the child's 0."""
    path = str(tmp_path / "socket")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(1)
    gate_read, gate_write = os.pipe()
    caller = subprocess.Popen(
        [sys.executable, "-I", "-S", "-c", CALLER_HELD_AFTER_ITS_FIRST_SEND, str(BIN.parent), path, str(gate_read)],
        env={"PATH": "/usr/bin:/bin"},
        pass_fds=(gate_read,),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    os.close(gate_read)
    try:
        listener.settimeout(30)
        conn, _ = listener.accept()
        with conn:
            data, ancillary, _flags, _addr = conn.recvmsg(65536, socket.CMSG_SPACE(3 * array.array("i").itemsize))
            for _level, _kind, payload in ancillary:
                for fd in array.array("i", payload[: len(payload) - len(payload) % 4]):
                    os.close(fd)
            (size,) = struct.unpack(">I", data[:4])
            assert len(data) == 4 + size  # the whole request came in the first send
            assert json.loads(data[4:])["argv"] == ["build"]
            conn.sendall(b'{"pid": 1}\n{"exit": 7}\n')
        os.write(gate_write, b"x")  # the call is over and its connection closed: the caller goes on
        _, stderr = caller.communicate(timeout=30)
    finally:
        os.close(gate_write)
        listener.close()
        if caller.poll() is None:
            caller.kill()
            caller.wait()
    assert (caller.returncode, stderr.decode()) == (7, "")
