"""cdk.json's `app` in the emulator's CLI folder: `python3 -I -S synth_client.py APP`. The run is
handed to the synth server (synth_server.py) named by INFERENCE_SYNTH_SOCKET, with this process's
environment, folder and standard streams, and this process exits as the app did; with no server
listening it runs the app itself (`python APP`). Standard library only: it starts in milliseconds."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "host"))
from aws_client import hand_over


def run_here():
    os.execv(sys.executable, [sys.executable, *sys.argv[1:]])


if __name__ == "__main__":
    hand_over(os.environ.get("INFERENCE_SYNTH_SOCKET"), sys.argv[1:], run_here)
