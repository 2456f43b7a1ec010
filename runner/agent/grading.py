"""Reads the count an agent's answer states, so that a right answer phrased the way people phrase
it passes, and an ambiguous or contradictory one fails.

Two routes, and the record says which one graded each run:

- `final-line`: the prompt asks for a last line `Answer: <number>`; the last such line is read.
  When the sentence before it states a different number, the answer contradicts itself.
- `free-text`: without that line, the last sentence that still states a number once everything
  that is not a count is set aside: comparisons and filters (`id >= 10`, `10 or more`,
  `greater than 9`), the tool's min and max echoed back, lists of ids, the list's own size
  (`of the 11 ids`), negated numbers (`not 7`), counts of other things (`one tool call`).

Either way exactly one distinct number must remain, and it must not be hedged: `8, or possibly
6` is ambiguous, `about 8` is hedged, and neither passes.

A value that is a string (a field read out of a record, `read_text`) is read the same strict way:
the last `Answer: X` line (an earlier answer line with another value contradicts it, a hedge fails
it), else a short one-line answer; it is compared after `normalise_text` (markup, quotes, a closing
full stop, spacing and case), never by similarity.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
NUMBER_WORDS = {word: value for value, word in enumerate(WORDS)}
NUM = r"(?:\d+(?:\.\d+)?|" + "|".join(sorted(WORDS, key=len, reverse=True)) + r")"

FINAL_LINE = re.compile(r"^[\W_]*(?:final\s+)?answer\s*[:=]\s*(?P<rest>.+?)\s*$", re.IGNORECASE | re.MULTILINE)
SENTENCE_BREAK = re.compile(r"\n+|(?<=[.!?;])\s+")
LIST_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+", re.MULTILINE)
MARKUP = re.compile(r"[*_`#>]")

# Spans that hold numbers which are not the count, set aside before the count is read.
NOT_A_COUNT = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\w+\([^()]*\)",  # a tool call echoed back: count_ids(op=">=", value=10)
        r"[\[(][^\[\]()]*" + NUM + r"[^\[\]()]*[,;][^\[\]()]*" + NUM + r"[^\[\]()]*[\])]",  # (10, 11, 12) [..]
        r"\b(?:between|from)\s+" + NUM + r"\s+(?:and|to|through)\s+" + NUM,
        r"\b" + NUM + r"\s*(?:-|–|to|through)\s*" + NUM + r"\b(?!\s+(?:ids?|of|are|items|numbers|values|entries))",
        r"(?:\bids?\b|\bvalues?\b)?\s*(?:>=|=>|≥|<=|=<|≤|==|!=|>|<)\s*" + NUM,
        r"\b(?:ids?|value|threshold|op|where)\s*(?:=|:|of)\s*['\"]?" + NUM,
        r"\b(?:value|threshold|cutoff)\s+" + NUM,
        r"\b"
        + NUM
        + r"\s+or\s+(?:more|greater|higher|above|larger|bigger|over|up|less|fewer|lower|below|smaller|under)\b",
        r"\b(?:at\s+least|at\s+most|no\s+(?:less|fewer|more)\s+than|not\s+less\s+than|(?:greater|more|larger|bigger|higher|less|fewer|smaller|lower)\s+than(?:\s+or\s+equal\s+to)?|equal\s+to|above|below|exceeding|exceeds?|threshold(?:\s+of)?|cutoff(?:\s+of)?)\s+"
        + NUM,
        r"\b(?:min(?:imum)?|max(?:imum)?|smallest|largest|lowest|highest|biggest|first|last)\b(?:\s+(?:matching\s+)?(?:id|value|one|number))?\s*(?:is|was|of|being|=|:)?\s*"
        + NUM,
        r"\bids?\s*[:#]?\s*" + NUM + r"(?:\s*(?:,|&|\band\b|\bor\b)\s*(?:and\s+)?" + NUM + r")*",
        NUM + r"(?:\s*(?:,|;)\s*(?:and\s+)?" + NUM + r"){2,}(?:\s*,?\s*(?:and|&)\s*" + NUM + r")?",
        r"\b(?:not|isn't|is\s+not|rather\s+than|instead\s+of|never)\s+" + NUM,
        r"\b" + NUM + r"\s+(?:is|was)\s+(?:wrong|incorrect|a\s+mistake)",
        r"\bout\s+of\s+(?:the\s+|all\s+)?" + NUM,
        r"\bof\s+(?:the|all|those|these)\s+" + NUM,
        r"/\s*" + NUM + r"\b",
        r"\b" + NUM + r"\s+(?:ids?\s+)?(?:in\s+total|total|overall|in\s+all|in\s+the\s+(?:list|table))",
        r"\b(?:all|total(?:\s+of)?)\s+" + NUM + r"\s+(?:ids|of\s+them|entries|rows)",
        r"\b" + NUM + r"\s+(?:tool\s+)?(?:calls?|times?|steps?|requests?|quer(?:y|ies)|tokens?|seconds?|ms|percent)\b",
        NUM + r"\s*%",
        r"\b(?:each|every|any|no|which|this|that|the)\s+one\b|\bone\s+of\b",
        r"\bstep\s+" + NUM,
    )
]
HEDGE_BEFORE = re.compile(
    r"\b(?:about|around|roughly|approximately|approx\.?|nearly|almost|maybe|perhaps|possibly|probably|likely)\s+"
    + NUM
    + r"|~\s*"
    + NUM,
    re.IGNORECASE,
)
HEDGE_AFTER = re.compile(NUM + r"\s*(?:or\s+so|-ish|ish)\b", re.IGNORECASE)
HEDGE_ANYWHERE = re.compile(r"\b(?:might\s+be|may\s+be|could\s+be|not\s+sure|unsure|uncertain)\b", re.IGNORECASE)
NUMBER = re.compile(r"(?<![\w.])" + NUM + r"(?![\w])", re.IGNORECASE)


@dataclass(frozen=True)
class Reading:
    """The number an answer states, the route that read it, and why it does not count (if so)."""

    number: float | None
    route: str  # final-line | free-text | none
    graded_text: str = ""
    problem: str | None = None

    @property
    def definite(self) -> bool:
        return self.number is not None and self.problem is None

    @property
    def quoted(self) -> int | float | None:
        """The number as the record keeps it (a whole number as one)."""
        return _plain(self.number)


def read_count(answer: str) -> Reading:
    """The count `answer` states, by the final line when there is one, else by the free text."""
    text = MARKUP.sub("", answer or "")
    finals = list(FINAL_LINE.finditer(text))
    if finals:
        last = finals[-1]
        final = _read_sentence(last.group("rest"), route="final-line")
        before = _read_free_text(text[: last.start()])
        if final.definite and before.definite and before.number != final.number:
            return Reading(
                final.number,
                "final-line",
                last.group(0).strip(),
                f"contradicts the sentence before it ({_plain(before.number)})",
            )
        return Reading(final.number, "final-line", last.group(0).strip(), final.problem)
    return _read_free_text(text)


def _read_free_text(text: str) -> Reading:
    text = LIST_MARKER.sub("", text)
    sentences = [s.strip() for s in SENTENCE_BREAK.split(text) if s.strip()]
    for sentence in reversed(sentences):
        reading = _read_sentence(sentence, route="free-text")
        if reading.number is not None or reading.problem not in (None, "no number"):
            return reading
    return Reading(None, "none", "", "no number")


def _read_sentence(sentence: str, *, route: str) -> Reading:
    remaining = sentence
    for pattern in NOT_A_COUNT:
        remaining = pattern.sub(" ¦ ", remaining)  # a mark, so what is left never joins up
    numbers = [_value(m.group(0)) for m in NUMBER.finditer(remaining)]
    distinct = list(dict.fromkeys(numbers))
    if not distinct:
        return Reading(None, route, sentence, "no number")
    if len(distinct) > 1:
        return Reading(None, route, sentence, "ambiguous: " + ", ".join(str(_plain(n)) for n in distinct))
    if HEDGE_BEFORE.search(remaining) or HEDGE_AFTER.search(remaining) or HEDGE_ANYWHERE.search(sentence):
        return Reading(distinct[0], route, sentence, "hedged")
    return Reading(distinct[0], route, sentence)


def _value(token: str) -> float:
    lowered = token.lower()
    return float(NUMBER_WORDS[lowered]) if lowered in NUMBER_WORDS else float(lowered)


def _plain(number: float | None) -> int | float | None:
    if number is None:
        return None
    return int(number) if float(number).is_integer() else number


# --- answers that are a string: a field read out of a record --------------------------------------

TEXT_HEDGE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|likely|i\s+think|i\s+believe|i\s+guess|not\s+sure|unsure|uncertain"
    r"|might\s+be|may\s+be|could\s+be)\b",
    re.IGNORECASE,
)
QUOTES = "\"'“”‘’"
EMPTY_ANSWER_LINE = re.compile(r"^[\W_]*(?:final\s+)?answer\s*[:=]\s*$", re.IGNORECASE)
# A whole answer without an `Answer:` line is read as the value only when it is this short, on one line.
WHOLE_ANSWER_WORDS = 6


def normalise_text(value: str) -> str:
    """What two strings are compared as: markup and surrounding quotes removed, a closing full stop
    dropped, runs of whitespace made one space, case folded."""
    text = " ".join(MARKUP.sub("", value or "").split())
    previous = None
    while text != previous:
        previous = text
        text = text.strip().strip(QUOTES).rstrip(".,;!").strip()
    return text.casefold()


@dataclass(frozen=True)
class TextReading:
    """The value a text answer states, the route that read it, and why it does not count (if so)."""

    value: str | None
    route: str  # final-line | whole-answer | none
    graded_text: str = ""
    problem: str | None = None

    @property
    def definite(self) -> bool:
        return self.value is not None and self.problem is None

    @property
    def quoted(self) -> str | None:
        return self.value


def read_text(answer: str) -> TextReading:
    """The value `answer` states, the strict way `read_count` reads a number: the last `Answer: X`
    line when there is one (an earlier answer line stating another value is a contradiction, a
    hedge in it fails it); without one, only a short one-line answer is taken as the value."""
    text = MARKUP.sub("", answer or "")
    finals = list(FINAL_LINE.finditer(text))
    if finals:
        last = finals[-1]
        rest = last.group("rest")
        value = normalise_text(rest)
        graded = last.group(0).strip()
        earlier = [normalise_text(f.group("rest")) for f in finals[:-1]]
        other = next((v for v in earlier if v != value), None)
        if not value:
            return TextReading(None, "final-line", graded, "no value")
        if other is not None:
            return TextReading(value, "final-line", graded, f"contradicts an earlier answer line ({other!r})")
        if TEXT_HEDGE.search(rest):
            return TextReading(value, "final-line", graded, "hedged")
        return TextReading(value, "final-line", graded)
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if len(lines) == 1 and len(lines[0].split()) <= WHOLE_ANSWER_WORDS:
        value = normalise_text(lines[0])
        if not value or EMPTY_ANSWER_LINE.match(lines[0]):
            return TextReading(None, "whole-answer", lines[0], "no value")
        return TextReading(value, "whole-answer", lines[0], "hedged" if TEXT_HEDGE.search(lines[0]) else None)
    return TextReading(None, "none", "", "no `Answer:` line")


# --- an answer that copies the question back -------------------------------------------------------

# An answer sentence this long or longer that is the start of a sentence of the question is an echo.
ECHO_MIN_WORDS = 3
SENTENCE_IN_LINE = re.compile(r"(?<=[.!?;])\s+")


def _plain_words(text: str) -> str:
    return " ".join(MARKUP.sub("", text).split()).casefold()


def strip_echo(answer: str, question: str) -> tuple[str, int]:
    """`answer` without the sentences it copied from `question` (whole, or cut off at the token
    limit), and how many were set aside: a base model often writes the question out again, and an
    echoed sentence states nothing of its own (`Reply with one short sentence` is not the count
    1; `12 are taken out` is not the answer 12). Only sentences of `ECHO_MIN_WORDS` words or
    more count as echoes, so a short answer (`24.`) is never taken for one. Lines are kept as
    lines, so a final `Answer:` line is still found."""
    asked = [_plain_words(s) for s in SENTENCE_BREAK.split(question or "") if s.strip()]
    removed = 0
    lines = []
    for line in (answer or "").splitlines():
        kept = []
        for sentence in SENTENCE_IN_LINE.split(line):
            plain = _plain_words(sentence)
            if len(plain.split()) >= ECHO_MIN_WORDS and any(q.startswith(plain) for q in asked):
                removed += 1
            else:
                kept.append(sentence)
        if kept or not line.strip():
            lines.append(" ".join(kept))
    return "\n".join(lines), removed
