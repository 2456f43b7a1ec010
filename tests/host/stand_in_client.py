"""A host's Python stand-in (`tests/host/bin/docker`, `systemctl`) as `python3 -I -S
stand_in_client.py MODULE ARGS...`: handed to the AWS CLI server named by AWS_CLI_SERVER, which
runs `MODULE` in a fork of itself with this process's argv, environment, folder and standard
streams (tests/host/aws_cli.py); with no server listening, `$HOST_PYTHON -m MODULE ARGS` here.
Standard library only: it starts in milliseconds."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # -I leaves this folder out
from aws_client import hand_over


def main() -> None:
    module, argv = sys.argv[1], sys.argv[2:]
    python = os.environ.get("HOST_PYTHON") or sys.executable

    def run_here():
        os.execv(python, [python, "-m", module, *argv])

    hand_over(os.environ.get("AWS_CLI_SERVER"), argv, run_here, module=module)


if __name__ == "__main__":
    main()
