"""What the agent commands write per record, typed: `runner.ask`'s timed answer, `runner.check`'s
result per backend, `runner.counting`'s graded runs, `runner.orchestrator`'s runs and
`runner.quality`'s graded items. Written by `runner.agent` and the commands, read back by their
tables (`runner.render`) and their exit status, which read attributes, not keys.

They sit in the lowest layer, beside the request records, so that the renderers can hold them
without depending on the agent machinery. Each `to_json` writes exactly the entry the evidence
holds (keys and their order); `from_json` reads it back, a malformed entry refused in one line
that names it (`*_of` prefixes the file).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from runner.core.records import RequestRecord
from runner.core.typed_json import read_entries, read_fields

# --- runner.ask ----------------------------------------------------------------------------------


@dataclass
class AskRecord:
    """One question to one backend: the timed request (as the bench records it), the question,
    whether the text came in pieces (and how many), and whether Ctrl-C cut it."""

    request: RequestRecord
    question: str = ""
    streamed: bool = False
    pieces: int = 0
    interrupted: bool = False

    def to_json(self) -> dict[str, Any]:
        return self.request.to_json() | {
            "question": self.question,
            "streamed": self.streamed,
            "pieces": self.pieces,
            "interrupted": self.interrupted,
        }

    @classmethod
    def from_json(cls, data: object, what: str) -> AskRecord:
        request = RequestRecord.from_json(data, what)
        return cls(request, **read_fields(cls, data, what, apart=("request",)))


def asks_of(evidence: Mapping[str, Any], where: object = None) -> list[AskRecord]:
    """An ask evidence file's records, typed, in order; a malformed one is one line."""
    return read_entries(evidence, "records", AskRecord.from_json, where)
