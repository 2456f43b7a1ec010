"""Reading the count from an answer: a table of phrasings written from real model output styles.

The question is demo 1's: how many of the ids 0, 2, 3, 20, 21, 22, 23, 10, 11, 12, 13 are 10 or
more (8). Each row: the answer, the number it must yield (None: no definite number), the route.
Right answers phrased the way models phrase them must pass; hedges, contradictions and answers
that never state the count must not.
"""

from __future__ import annotations

import pytest

from runner.agent.grading import read_count

FREE, FINAL = "free-text", "final-line"

PHRASINGS = [
    # plain statements, digits and words
    ("8", 8, FREE),
    ("There are 8 ids that are 10 or more.", 8, FREE),
    ("Eight of the ids are 10 or more.", 8, FREE),
    ("There are eight.", 8, FREE),
    ("The answer is 8 (eight).", 8, FREE),
    ("There are **8** ids.", 8, FREE),
    ("There are 8 ids with values 10 through 23.", 8, FREE),
    # the filter echoed back
    ("Using id > 9, the count is 8.", 8, FREE),
    ("Count: 8 (ids ≥ 10).", 8, FREE),
    ("Using count_ids(op='>=', value=10): count = 8.", 8, FREE),
    ("I made one call to count_ids with op '>=' and value 10; it found 8 matching ids.", 8, FREE),
    ("8 out of 11 ids are greater than or equal to 10.", 8, FREE),
    ("Of the 11 ids, 8 are 10 or more.", 8, FREE),
    ("Eleven ids in total; eight of them are 10 or more.", 8, FREE),
    # the tool's min and max echoed back
    (
        "The count_ids tool (id >= 10) returned a count of 8, with a minimum of 10 and a maximum of 23.",
        8,
        FREE,
    ),
    ("There are eight ids ≥ 10; the smallest is 10 and the largest is 23.", 8, FREE),
    ("Between 10 and 23 there are 8 ids.", 8, FREE),
    # lists of ids before or around the count
    ("The matching ids are 10, 11, 12, 13, 20, 21, 22 and 23, so the count is 8.", 8, FREE),
    ("Ids 20, 21, 22, 23, 10, 11, 12 and 13 qualify. That makes eight.", 8, FREE),
    ("There are 8 ids (10, 11, 12, 13, 20, 21, 22, 23) that are at least 10.", 8, FREE),
    ("1. Call count_ids with id >= 10.\n2. The tool returned 8.\nSo the answer is 8.", 8, FREE),
    ("The count is 8 out of 11 total ids, i.e. 72.7%.", 8, FREE),
    ("The answer is 8.\n\nLet me know if you need anything else.", 8, FREE),
    # corrections
    ("The answer is 7. Wait, I miscounted: it is 8.", 8, FREE),
    ("The count is 8, not 7.", 8, FREE),
    ("7 was wrong; the count is 8.", 8, FREE),
    ("8. Actually, make that 7.", 7, FREE),
    # wrong numbers are read as such
    ("There are 7 ids greater than 10.", 7, FREE),
    # hedges and ambiguity: no definite number
    ("8, or possibly 6.", None, FREE),
    ("7 or 8", None, FREE),
    ("It's about 8.", None, FREE),
    ("Roughly 8 ids.", None, FREE),
    ("I'm not sure, but it might be 8.", None, FREE),
    # never states the count
    ("The ids that are 10 or more are: 10, 11, 12, 13, 20, 21, 22, 23.", None, "none"),
    ("I could not determine the count.", None, "none"),
    # the fixed final line
    ("Answer: 8", 8, FINAL),
    ("ANSWER: 8.", 8, FINAL),
    ("**Answer:** eight", 8, FINAL),
    ("Filtering with id >= 10 gives 8 ids.\nAnswer: 8", 8, FINAL),
    ("The tool says count 8, min 10, max 23.\n\nAnswer: 8", 8, FINAL),
    ("Answer: 8\nThe matching ids range from 10 to 23.", 8, FINAL),
    ("Eight ids are 10 or more.\nFinal answer: 8 ids", 8, FINAL),
    ("There are 7 such ids.\nAnswer: 8", None, FINAL),
    ("Answer: 8 or 9", None, FINAL),
    ("Answer: approximately 8", None, FINAL),
]


def test_the_table_is_large_enough():
    assert len(PHRASINGS) >= 20
    assert {route for _, _, route in PHRASINGS} == {FREE, FINAL, "none"}


@pytest.mark.parametrize(("answer", "number", "route"), PHRASINGS, ids=[a[:40] for a, _, _ in PHRASINGS])
def test_reading(answer, number, route):
    reading = read_count(answer)
    assert reading.route == route, reading
    if number is None:
        assert not reading.definite, reading
    else:
        assert reading.definite and reading.number == number, reading


def test_a_contradiction_names_both_numbers():
    reading = read_count("There are 7 such ids.\nAnswer: 8")
    assert reading.number == 8 and reading.problem == "contradicts the sentence before it (7)"


def test_ambiguity_names_the_numbers_it_saw():
    assert read_count("8, or possibly 6.").problem in ("ambiguous: 8, 6", "hedged")
    assert read_count("7 or 8").problem == "ambiguous: 7, 8"
