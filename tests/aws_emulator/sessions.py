"""Session Manager: moto has no StartSession, TerminateSession, DescribeSessions or
DescribeInstanceInformation. They are added with the real API's shapes: a running EC2 instance
is `Online` unless `Emulator.take_offline(instance_id)`, StartSession on anything else answers
TargetNotConnected, and sessions are kept per region until terminated."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any


def install(emulator: Any) -> Callable[[], None]:
    from moto.core.exceptions import JsonRESTError
    from moto.core.responses import ActionResult
    from moto.ec2.models import ec2_backends
    from moto.ssm.responses import SimpleSystemManagerResponse

    def running(response) -> dict[str, Any]:
        backend = ec2_backends[response.current_account][response.region]
        return {i.id: i for i in backend.all_instances() if i.state == "running"}

    def describe_instance_information(response):
        wanted = None
        for item in response._get_param("Filters") or []:
            if item.get("Key") == "InstanceIds":
                wanted = set(item.get("Values", []))
        listed = []
        for instance_id, instance in running(response).items():
            if wanted is not None and instance_id not in wanted:
                continue
            online = instance_id not in emulator.offline
            listed.append(
                {
                    "InstanceId": instance_id,
                    "PingStatus": "Online" if online else "ConnectionLost",
                    "LastPingDateTime": datetime.now(UTC),
                    "AgentVersion": "3.3.1802.0",
                    "IsLatestVersion": True,
                    "PlatformType": "Linux",
                    "PlatformName": "Ubuntu",
                    "ResourceType": "EC2Instance",
                    "IPAddress": instance.private_ip,
                    "ComputerName": instance.private_dns_name if hasattr(instance, "private_dns_name") else instance.id,
                }
            )
        return ActionResult({"InstanceInformationList": listed})

    def start_session(response):
        target = response._get_param("Target")
        if target not in running(response) or target in emulator.offline:
            raise JsonRESTError("TargetNotConnected", f"{target} is not connected.")
        session_id = f"botocore-session-{uuid.uuid4().hex[:17]}"
        emulator.sessions[session_id] = {
            "SessionId": session_id,
            "Target": target,
            "Status": "Connected",
            "StartDate": datetime.now(UTC),
            "Owner": f"arn:aws:sts::{response.current_account}:assumed-role/tests/botocore-session",
            "DocumentName": response._get_param("DocumentName"),
            "Region": response.region,
            # What the session was started with, for the tests (DescribeSessions does not say it).
            "Parameters": response._get_param("Parameters") or {},
        }
        return ActionResult(
            {
                "SessionId": session_id,
                "TokenValue": uuid.uuid4().hex,
                "StreamUrl": f"wss://ssmmessages.{response.region}.amazonaws.com/v1/data-channel/{session_id}"
                "?role=publish_subscribe&cell-number=AAEAAQ",
            }
        )

    def terminate_session(response):
        session_id = response._get_param("SessionId")
        session = emulator.sessions.get(session_id)
        if session is not None and session["Status"] == "Connected":
            session["Status"] = "Terminated"
            session["EndDate"] = datetime.now(UTC)
        return ActionResult({"SessionId": session_id})

    def describe_sessions(response):
        active = response._get_param("State") == "Active"
        sessions = [
            {k: v for k, v in s.items() if k not in ("Region", "Parameters")}
            for s in emulator.sessions.values()
            if s["Region"] == response.region and (s["Status"] == "Connected") == active
        ]
        return ActionResult({"Sessions": sessions})

    added = {
        "describe_instance_information": describe_instance_information,
        "start_session": start_session,
        "terminate_session": terminate_session,
        "describe_sessions": describe_sessions,
    }
    for name, method in added.items():
        setattr(SimpleSystemManagerResponse, name, method)
    return lambda: [delattr(SimpleSystemManagerResponse, name) for name in added]
