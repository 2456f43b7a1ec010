"""Stands in for the Session Manager plugin: called exactly as the runner (and the AWS CLI) call
the real one, it opens the local port the session asked for and relays every connection to the
upstream named for the target in STAND_IN_UPSTREAMS (JSON {instance_id or "*": "host:port"}).

STAND_IN_MODE=exit makes it fail at once, as the real plugin does when the session is refused.
Without a localPortNumber it listens on a port of its own and names it in its "opened" line; a
local port that is taken ends it with status 1 and the bind error.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading


def relay(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (sink, source):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def main() -> int:
    variable, region, operation, _profile, request_json, endpoint = sys.argv[1:7]
    response = json.loads(os.environ[variable])
    request = json.loads(request_json)
    assert operation == "StartSession" and region and endpoint, sys.argv
    session_id = response["SessionId"]
    assert response["TokenValue"] and response["StreamUrl"].startswith("wss://")
    if os.environ.get("STAND_IN_MODE") == "exit":
        print(f"An error occurred (TargetNotConnected) when calling the StartSession operation: {request['Target']}")
        return 255
    upstreams = json.loads(os.environ.get("STAND_IN_UPSTREAMS", "{}"))
    upstream = upstreams.get(request["Target"]) or upstreams["*"]
    host, port = upstream.rsplit(":", 1)
    # No localPortNumber: a port of its own, named in the "opened" line (as the real plugin does).
    local_port = int((request["Parameters"].get("localPortNumber") or ["0"])[0])
    print(f"\nStarting session with SessionId: {session_id}", flush=True)
    try:
        listener = socket.create_server(("127.0.0.1", local_port), backlog=128)
    except OSError as error:
        print(f"listen tcp 127.0.0.1:{local_port}: bind: {error.strerror.lower()}", flush=True)
        return 1
    signal.signal(signal.SIGTERM, lambda *_: os._exit(0))
    local_port = listener.getsockname()[1]
    print(f"Port {local_port} opened for sessionId {session_id}.", flush=True)
    print("Waiting for connections...\n", flush=True)
    while True:
        client, _ = listener.accept()
        print(f"Connection accepted for session [{session_id}]", flush=True)
        server = socket.create_connection((host, int(port)))
        threading.Thread(target=relay, args=(client, server), daemon=True).start()
        threading.Thread(target=relay, args=(server, client), daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
