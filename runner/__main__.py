"""`python -m runner`: every command with its one-line summary (runner/commands.py); `python -m
runner COMMAND ARGS` runs that command as `python -m runner.COMMAND ARGS` does (pip's own
`pip COMMAND`: the registry names the module, which is imported only when it runs)."""

from __future__ import annotations

import os
import sys

from runner.commands import BY_NAME, listing


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        try:
            print(listing(), flush=True)
        except BrokenPipeError:  # `python -m runner | head`: the reader has what it wanted
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    name = argv[0].replace("-", "_").removeprefix("runner.")
    command = BY_NAME.get(name)
    if command is None:
        print(f"error: no command {argv[0]!r}; `python -m runner` lists them", file=sys.stderr)
        return 2
    sys.argv = [f"python -m {command.module}", *argv[1:]]
    command.load().main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
