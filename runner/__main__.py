"""`python -m runner`: every command, with its one-line summary (runner/commands.py)."""

from runner.commands import listing

if __name__ == "__main__":
    print(listing())
