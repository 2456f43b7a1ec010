"""SSM port forwards to the EC2 servers: readiness and the instance's SSM ping first, then a
session handed to the Session Manager plugin (as the AWS CLI hands it), recorded in the forwards
file; and closing them, plugin and session."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from catalog.contract import BackendOutput
from catalog.serving import serving
from runner.cloud.aws import boto_client
from runner.cloud.outputs import read_outputs_file, read_stack_outputs
from runner.cloud.reach.forwards_file import (
    SESSION_RESPONSE_VARIABLE,
    Forward,
    forwards_file,
    process_alive,
    read_forwards,
    stop_process,
    write_forwards,
)
from runner.cloud.readiness import read_group, read_readiness
from runner.core.console import console
from runner.core.errors import RunnerError, describe
from runner.core.evidence import now_iso
from runner.core.ports import port_is_free

PLUGIN = "session-manager-plugin"


PLUGIN_INSTALL = (
    "install the Session Manager plugin: "
    "https://docs.aws.amazon.com/systems-manager/latest/userguide/session-manager-working-with-install-plugin.html"
)


DOCUMENT = "AWS-StartPortForwardingSession"


@dataclass
class ForwardOptions:
    backends: list[str] | None = None
    outputs_file: Path | None = None
    region: str | None = None
    ports: dict[str, int] | None = None
    plugin: str = PLUGIN
    open_timeout_s: float = 30.0


@dataclass
class Outcome:
    """One server's line in the table: a forward opened, or why not."""

    backend: str
    region: str
    state: str
    detail: str
    forward: Forward | None = None


def find_plugin(plugin: str) -> str:
    found = shutil.which(plugin)
    if found is None:
        raise RunnerError(f"the Session Manager plugin ({plugin}) is not on PATH: {PLUGIN_INSTALL}")
    return found


def close_forwards(aws: bool) -> list[Forward]:
    """Stop every recorded plugin and end its SSM session; the state file is removed."""
    forwards = read_forwards()
    for forward in forwards:
        if process_alive(forward.pid):
            stop_process(forward.pid)
        if aws:
            terminate_session(forward.region, forward.session_id)
    write_forwards([])
    return forwards


def terminate_session(region: str, session_id: str) -> None:
    """End the SSM session on AWS's side too (a killed plugin leaves it open until it times out)."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        boto_client("ssm", region, 10).terminate_session(SessionId=session_id)
    except (BotoCoreError, ClientError) as error:
        console.print(f"[yellow]note:[/yellow] session {session_id} in {region}: {describe(error)}")


def ec2_servers(options: ForwardOptions) -> list[BackendOutput]:
    if options.outputs_file:
        reading = read_outputs_file(options.outputs_file)
        where = f"outputs file {options.outputs_file}"
    else:
        reading = read_stack_outputs(options.region)
        where = "CloudFormation" + (f" in {options.region}" if options.region else "")
    for problem in reading.problems:
        console.print(f"[yellow]note:[/yellow] {problem}")
    if not reading.backends:
        raise RunnerError(f"{where} holds no backend of this app (no Backend* outputs): deploy first (runner.up)")
    servers = [b for b in reading.backends if serving(b.kind).port_forward]
    if options.backends:
        known = {b.name for b in reading.backends}
        unknown = [name for name in options.backends if name not in known]
        if unknown:
            raise RunnerError(f"--backends: {', '.join(unknown)} not deployed (deployed: {', '.join(sorted(known))})")
        servers = [b for b in servers if b.name in options.backends]
    if not servers:
        raise RunnerError(f"{where}: no EC2 server to forward (SageMaker and Bedrock are reached through the API)")
    return servers


def choose_port(name: str, options: ForwardOptions, taken: set[int]) -> tuple[int | None, str]:
    """The asked-for port (which must be free), else the catalog's while it is free, else None:
    the plugin then listens on a port of its own choosing and says which (`plugin_port`)."""
    from catalog import CatalogError, get_backend

    asked = (options.ports or {}).get(name)
    if asked is not None:
        if asked in taken or not port_is_free(asked):
            raise RunnerError(f"local port {asked} is taken by another process: pass --forward {name}=OTHER_PORT")
        return asked, ""
    try:
        default = get_backend(name).forward_port
    except CatalogError:
        default = None
    if default and default not in taken and port_is_free(default):
        return default, ""
    return None, f"port {default} was taken" if default else ""


# The plugin's line once its listener is bound (aws/session-manager-plugin, BasicPortForwarding
# .startLocalListener: "Port %s opened for sessionId %s."): with no localPortNumber it binds a port
# of its own and names it here, which is how community.aws's SSM connection reads it too.
OPENED = re.compile(r"^Port (\d+) opened for sessionId (\S+?)\.?$", re.MULTILINE)


def plugin_port(log_text: str, session_id: str) -> int | None:
    """The local port the plugin says it listens on for `session_id`, or None before it says so."""
    return next((int(m.group(1)) for m in OPENED.finditer(log_text) if m.group(2) == session_id), None)


def instance_online(ssm: Any, instance_id: str) -> str:
    """SSM's PingStatus for the instance (`Online` when its agent is connected), or `not registered`."""
    found = ssm.describe_instance_information(Filters=[{"Key": "InstanceIds", "Values": [instance_id]}])
    listed = found.get("InstanceInformationList") or []
    return listed[0].get("PingStatus", "unknown") if listed else "not registered"


def open_forward(server: BackendOutput, options: ForwardOptions, plugin: str, taken: set[int]) -> Outcome:
    """Readiness, SSM ping, a free port, the session, the plugin: each step's refusal is one line."""
    ssm = boto_client("ssm", server.region, 15)
    readiness = read_readiness(ssm, server.readiness_parameter)
    if readiness.state != "ready" or not readiness.instance_id:
        return Outcome(server.name, server.region, "skipped", f"server is {readiness.line}")
    group = read_group(boto_client("autoscaling", server.region, 15), server.auto_scaling_group or "")
    if not group.instance_id:
        return Outcome(
            server.name, server.region, "skipped", f"server has no instance (its group is at {group.desired})"
        )
    if readiness.stale_for(group.instance_id):
        # A replaced instance (rolling update, zone move): the record is its predecessor's.
        return Outcome(
            server.name,
            server.region,
            "skipped",
            f"readiness is stale: written by {readiness.instance_id}, the group now runs {group.instance_id}",
        )
    ping = instance_online(ssm, readiness.instance_id)
    if ping != "Online":
        return Outcome(server.name, server.region, "skipped", f"{readiness.instance_id} is not on SSM yet ({ping})")
    local_port, note = choose_port(server.name, options, taken)
    log = forwards_file().parent / ".forwards" / f"{server.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    forward, problem = start_plugin(server, readiness.instance_id, ssm, plugin, local_port, options, log)
    asked = server.name in (options.ports or {})
    if forward is None and local_port is not None and not asked and not port_is_free(local_port):
        # The catalog's port was taken between the check and the plugin's bind: the plugin picks one.
        note = f"port {local_port} was taken"
        forward, problem = start_plugin(server, readiness.instance_id, ssm, plugin, None, options, log)
    if forward is None:
        return Outcome(server.name, server.region, "failed", problem or "")
    taken.add(forward.local_port)
    detail = f"127.0.0.1:{forward.local_port} -> {readiness.instance_id}:{server.port}"
    if note:
        detail += f" ({note}, using {forward.local_port})"
    return Outcome(server.name, server.region, "open", detail, forward)


def start_plugin(
    server: BackendOutput,
    instance_id: str,
    ssm: Any,
    plugin: str,
    local_port: int | None,
    options: ForwardOptions,
    log: Path,
) -> tuple[Forward | None, str | None]:
    """One session and its plugin on `local_port` (None: a port the plugin chooses): the forward
    once the plugin says it listens, else why not, with the plugin stopped and the session ended."""
    parameters = {"portNumber": [str(server.port)]}
    if local_port is not None:
        parameters["localPortNumber"] = [str(local_port)]
    request = {"Target": instance_id, "DocumentName": DOCUMENT, "Parameters": parameters}
    session = ssm.start_session(**request)
    session.pop("ResponseMetadata", None)
    env = dict(os.environ, **{SESSION_RESPONSE_VARIABLE: json.dumps(session)})
    argv = [
        plugin,
        SESSION_RESPONSE_VARIABLE,
        server.region,
        "StartSession",
        os.environ.get("AWS_PROFILE", ""),
        json.dumps(request),
        ssm.meta.endpoint_url,
    ]
    with log.open("wb") as sink:
        child = subprocess.Popen(
            argv, env=env, stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT, start_new_session=True
        )
    opened, problem = wait_until_open(child, session["SessionId"], local_port, options.open_timeout_s, log)
    if opened is None:
        stop_process(child.pid)
        child.wait(timeout=5)
        terminate_session(server.region, session["SessionId"])
        return None, problem
    forward = Forward(
        backend=server.name,
        pid=child.pid,
        local_port=opened,
        remote_port=server.port,
        instance_id=instance_id,
        region=server.region,
        session_id=session["SessionId"],
        started_at=now_iso(),
        log=str(log),
        output=server.to_json(),
    )
    return forward, None


def wait_until_open(
    child: subprocess.Popen, session_id: str, port: int | None, timeout_s: float, log: Path
) -> tuple[int | None, str | None]:
    """The port once the plugin says it listens on it for this session (a port merely busy may be
    another program's); else why not: it exited, or took too long."""
    where = f"port {port}" if port is not None else "a port"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        code = child.poll()
        text = log.read_text(errors="replace")
        opened = plugin_port(text, session_id)
        if opened is not None and code is None:
            return opened, None
        if code is not None:
            last = next((line for line in reversed(text.splitlines()) if line.strip()), "")
            return None, f"the plugin exited with status {code} before opening {where}" + (f": {last}" if last else "")
        time.sleep(0.1)
    return None, f"the plugin did not open {where} within {timeout_s:g} s (its log: {log})"


def forward_all(options: ForwardOptions) -> list[Outcome]:
    """Open every forward; the state file is rewritten after each, and Ctrl-C closes what opened."""
    plugin = find_plugin(options.plugin)
    servers = ec2_servers(options)
    opened: list[Forward] = []
    outcomes: list[Outcome] = []
    taken: set[int] = set()
    try:
        for server in servers:
            console.print(f"[dim]{server.name}: forwarding from {server.region} …[/dim]")
            try:
                outcome = open_forward(server, options, plugin, taken)
            except RunnerError as error:
                outcome = Outcome(server.name, server.region, "failed", str(error))
            except Exception as error:  # an AWS refusal for one server never stops the others
                outcome = Outcome(server.name, server.region, "failed", describe(error))
            outcomes.append(outcome)
            if outcome.forward:
                opened.append(outcome.forward)
                write_forwards(opened)
    except KeyboardInterrupt:
        for forward in opened:
            stop_process(forward.pid)
            terminate_session(forward.region, forward.session_id)
        write_forwards([])
        raise
    return outcomes


def hold(forwards: list[Forward]) -> None:
    """Wait in the foreground until Ctrl-C or until every plugin has exited."""
    while any(process_alive(f.pid) for f in forwards):
        time.sleep(0.5)
    console.print("[yellow]every forward has closed[/yellow]")
