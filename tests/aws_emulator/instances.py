"""Instances that boot: moto runs no user data. Every instance whose user data is one of the app's
boot scripts boots it on a stand-in host (tests/host) with the real AWS CLI pointed at the
emulator, so every call the script makes (readiness, the group's capacity, the build, ECR) lands
here. Terminating an instance shuts its host down a moment later, as a real instance takes a
while to stop (its scripts finish the call they are in). SSM Run Command (`AWS-RunShellScript`),
which moto records without running, runs its commands on the target's host.

What an instance has and does comes from `Emulator.host_options[backend]` (a HostOptions); its
type, and the instance store that type has (catalog/boot.py INSTANCE_DISKS, as EC2's
DescribeInstanceTypes gives it), are the launched instance's.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from catalog.boot import instance_store_gb
from tests.host import processes
from tests.host.machine import Host, HostOptions

# The app's user data runs its boot archive's `inference-boot` (inference_constructs/user_data.py).
BOOT_MARKER = "/usr/local/bin/inference-boot"
# How long a terminated instance takes to stop (real seconds).
SHUTDOWN_DELAY_S = 2.0


def boot(emulator: Any, instance: Any, script: str) -> None:
    backend = re.search(r"^# Inference backend (\S+):", script, re.M)
    name = backend.group(1) if backend else "?"
    options = emulator.host_options.get(name) or HostOptions(
        instance_store_gb=instance_store_gb(instance.instance_type)
    )
    options = replace(options, instance_type=instance.instance_type)
    host = Host(
        root=emulator.scratch / "hosts" / instance.id,
        instance_id=instance.id,
        zone=instance.availability_zone,
        env=emulator.host_env()
        | {
            "AWS_REGION": instance.region_name,
            "AWS_DEFAULT_REGION": instance.region_name,
            "REGISTRY_DIR": str(emulator.scratch / "registry"),
        },
        options=options,
    )
    emulator.hosts[instance.id] = host
    host.boot(script)


def shut_down_all(emulator: Any) -> None:
    """Every host ends, those of instances terminated a moment ago too: a host left running when
    the test ends would outlive the run (its units are processes of their own sessions)."""
    for host in list(emulator.hosts.values()):
        host.shutdown()
    emulator.hosts.clear()
    while emulator.shutting_down:
        emulator.shutting_down.pop().join()


def assert_no_host_left(emulator: Any, timeout_s: float = 5.0) -> None:
    """No process of any host this emulator booted outlives it (each carries its HOST_STATE)."""
    prefix = f"HOST_STATE={emulator.scratch / 'hosts'}/"
    deadline = time.monotonic() + timeout_s
    while (left := processes.carrying_prefix(prefix)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not left, f"host processes left running after the emulator stopped: {left}"


def install(emulator: Any) -> Callable[[], None]:
    from moto.ec2.models.instances import Instance, InstanceBackend
    from moto.ssm.responses import SimpleSystemManagerResponse

    original_run = InstanceBackend.run_instances
    original_terminate = Instance.terminate
    original_send = SimpleSystemManagerResponse.send_command

    def run_instances(backend, image_id, count, user_data, security_group_names, **kwargs):
        reservation = original_run(backend, image_id, count, user_data, security_group_names, **kwargs)
        for instance in reservation.instances:
            data = instance.user_data
            script = data.decode() if data is not None and hasattr(data, "decode") else ""
            if BOOT_MARKER in script:
                threading.Thread(target=boot, args=(emulator, instance, script), daemon=True).start()
        return reservation

    def terminate(instance):
        host = emulator.hosts.pop(instance.id, None)
        if host is not None:

            def later() -> None:
                time.sleep(SHUTDOWN_DELAY_S)
                host.shutdown()

            thread = threading.Thread(target=later, daemon=True)
            thread.start()
            emulator.shutting_down.append(thread)
        return original_terminate(instance)

    def send_command(response):
        result = original_send(response)
        if response._get_param("DocumentName") == "AWS-RunShellScript":
            commands = (response._get_param("Parameters") or {}).get("commands", [])
            for instance_id in response._get_param("InstanceIds") or []:
                host = emulator.hosts.get(instance_id)
                if host is not None:
                    threading.Thread(target=host.run, args=("\n".join(commands),), daemon=True).start()
        return result

    InstanceBackend.run_instances = run_instances
    Instance.terminate = terminate
    SimpleSystemManagerResponse.send_command = send_command

    def undo() -> None:
        InstanceBackend.run_instances = original_run
        Instance.terminate = original_terminate
        SimpleSystemManagerResponse.send_command = original_send

    return undo
