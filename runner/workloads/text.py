"""Real text of a chosen length in a backend's own tokens.

The sentences are plain English prose written for this project (about the sea, weather, cities,
machines and work), so a tokenizer meets words, punctuation and numbers as it would in a user's
prompt, not random token ids. A request's text is a seeded walk through them: requests differ
from their first word (so no server shares a prefix between them unless the workload asks for
one), and the same seed gives the same text.

`fit` reaches a target on a `TokenCounter` (the server's own count where it has one, else a
calibration from the usage it reports): a few counts, each moving the word count by the
measured ratio, then one word at a time.
"""

from __future__ import annotations

import random
from collections.abc import Callable

SENTENCES = (
    "The harbour wakes before the town does, when the first boats slip their moorings in the grey light.",
    "A fisherman counts his crates twice, because the price at the market depends on the weight he brings in.",
    "Across the bay the lighthouse keeps turning, though no ship has needed it since the radar mast went up.",
    "Salt gets into everything here: the hinges, the paint, the engines and the old men's voices.",
    "By nine o'clock the wind has shifted to the south-west and the water turns from pewter to green.",
    "Tides follow the moon, but the currents in the strait follow the shape of a seabed nobody has seen.",
    "The ferry carries forty cars and three hundred passengers, and it has not missed a crossing in eleven years.",
    "On the pier a child drops a line with a piece of bread on the hook and waits with enormous patience.",
    "Storms in this season come quickly, a dark wall on the horizon that arrives within the hour.",
    "The coastguard station logs every call, the time it came in, the position given and the outcome.",
    "An engineer on the night shift watches the pressure gauges and writes the readings into a paper book.",
    "The turbine hall is warm and loud, and the floor trembles slightly under the weight of the machines.",
    "Every valve has a number painted on it, and every number appears on a drawing kept in the control room.",
    "When the load rises in the evening, two more units are brought online and the frequency settles again.",
    "A maintenance crew replaces a bearing that has worn unevenly, measuring the shaft to a hundredth of a millimetre.",
    "The old bridge was built of stone in eighteen forty, and it still carries the morning traffic into the city.",
    "Trams run every six minutes on the main line, and every fifteen minutes on the branch to the hospital.",
    "A baker opens at five, and by seven there is a queue that reaches past the newsagent on the corner.",
    "The library keeps its longest hours in winter, when the reading room is the warmest place in the district.",
    "On the top floor of the market hall a small office rents out stalls by the week and by the season.",
    "Rain falls on the city for nine days, and the river rises until it touches the arches of the lowest bridge.",
    "The weather service issues its forecast at six, at noon and at six again, each one a little more certain.",
    "Clouds that form over the hills in the afternoon often break into showers before they reach the coast.",
    "A farmer reads the sky as carefully as any instrument, and he is wrong about as often as the forecast.",
    "In a dry year the reservoir drops so far that the roofs of the drowned village show above the water.",
    "The factory makes one thing, a valve for water mains, and it makes about four thousand of them a week.",
    "Orders arrive by email and by telephone, and a clerk enters each one into a system older than she is.",
    "Each valve is pressure tested before it leaves, and the result is stamped on a tag fixed to the body.",
    "The warehouse holds three weeks of stock, arranged so the oldest pallets are always shipped first.",
    "A lorry leaves for the port every afternoon, and the driver knows every roundabout between here and the sea.",
    "Students arrive at the engineering school in September with new notebooks and very little sleep.",
    "The first lecture covers units and dimensions, because a wrong unit has sunk more projects than bad ideas.",
    "In the laboratory they break concrete cylinders in a press and record the load at which each one fails.",
    "A good report states what was measured, how it was measured, and how far the figure can be trusted.",
    "The professor asks every student to estimate an answer before calculating it, and to explain any difference.",
    "At the observatory the telescope dome opens at dusk, and the night assistant checks the humidity first.",
    "A clear night gives perhaps seven hours of observing, less in summer, and none at all in a storm.",
    "The camera records an image every ninety seconds, and each image is calibrated against a dark frame.",
    "Most of the work happens later, at a desk, where the images are compared, measured and catalogued.",
    "Sometimes a faint point of light moves between two frames, and someone stays up late to follow it.",
    "The mountain road climbs in forty bends from the valley floor to the pass, closed from November to May.",
    "Walkers set out from the hut at first light to reach the ridge before the afternoon cloud comes down.",
    "A shepherd moves his flock to the high pasture in June and brings it back when the first snow falls.",
    "The glacier has retreated almost a kilometre in a lifetime, and a sign marks where its edge once stood.",
    "Water from the melting ice feeds a river that turns a dozen mills before it reaches the plain.",
    "In the hospital the night is never quiet, but it has its own rhythm of rounds, alarms and hushed talk.",
    "A nurse checks each patient's chart at midnight, noting the figures and the time beside her initials.",
    "The pharmacy dispenses medicines against written orders, and every dose is counted in and counted out.",
    "When the morning shift arrives, the handover takes twenty minutes and covers every bed on the ward.",
    "The ambulance station keeps two vehicles ready at all times, their engines checked at the start of each shift.",
    "A ship's cook plans meals for thirty people for three weeks, with a store that cannot be topped up.",
    "The navigator plots a course around a weather system, adding a day to the voyage to save the cargo.",
    "In heavy seas the crew secures everything that can move, and then checks it all again an hour later.",
    "When the coast appears at last, it is a thin grey line that slowly turns into cliffs, fields and roofs.",
    "The pilot boards outside the harbour and brings the ship in through a channel barely wider than its beam.",
    "A railway timetable is a promise made months in advance, and the whole network bends to keep it.",
    "Signal boxes once stood every few miles along the line; now a single room controls a hundred miles of track.",
    "A freight train of forty wagons needs almost a mile to stop, so the signals are placed with care.",
    "Passengers notice the train that is late, never the thousand that run on time the same morning.",
    "At the terminus the cleaners have twelve minutes to prepare the train before it sets off again.",
)
# A number per request in its first words: requests that differ from the first word on.
OPENING = "Request {index}. "

TokenCounter = Callable[[str], int]


def passage(words: int, seed: int) -> str:
    """About `words` words of the sentences in a seeded order, cut at a word."""
    rng = random.Random(seed)
    order = list(SENTENCES)
    out: list[str] = []
    while len(out) < words:
        rng.shuffle(order)
        for sentence in order:
            out.extend(sentence.split())
            if len(out) >= words:
                break
    return " ".join(out[:words])


def fit(target: int, count: TokenCounter, seed: int, *, lead: str = "", tolerance: int = 0) -> tuple[str, int]:
    """(text, its count) for a text whose count is `target` (within `tolerance`), or the closest
    found from below. `lead` goes first (a shared prefix); the rest is the seeded passage."""
    text, got, _ = fit_words(target, count, seed, lead=lead, tolerance=tolerance)
    return text, got


def fit_words(
    target: int,
    count: TokenCounter,
    seed: int,
    *,
    lead: str = "",
    tolerance: int = 0,
    words_per_token: float | None = None,
) -> tuple[str, int, int]:
    """`fit`, and the passage's words; `words_per_token` (what earlier texts on the same count
    gave) is the first guess and the step, else 0.7 and the ratio each count shows. A count that
    lands on the target ends it: one more word adds at least one token (every tokenizer here starts
    a token at a space), so the word after it need not be counted."""
    if target < 1:
        raise ValueError("a target of at least one token")
    words = max(1, round(target * (words_per_token or 0.7)))
    seen: dict[int, int] = {}

    def measure(n: int) -> int:
        if n not in seen:
            seen[n] = count(lead + OPENING.format(index=seed) + passage(n, seed))
        return seen[n]

    for _ in range(6):  # proportional steps: the ratio of words to tokens is close to constant
        got = measure(words)
        if abs(got - target) <= tolerance:
            break
        step = round((target - got) * (words_per_token or words / max(got, 1)))
        words = max(1, words + (step if step else (1 if got < target else -1)))
    # Then a word at a time towards the target, keeping the best from below.
    got = measure(words)
    while got > target + tolerance and words > 1:
        words -= 1
        got = measure(words)
    if got != target or tolerance:
        while words < 100_000 and measure(words + 1) <= target + tolerance:
            words += 1
    text = lead + OPENING.format(index=seed) + passage(words, seed)
    return text, measure(words), words


class Fitter:
    """`fit` on one backend's count, made cheaper by what it has seen: the words per token of the
    texts fitted so far (after the same lead: a shared prefix has tokens but no passage words)
    start the next one, so most take two counts rather than four (on the embedded model, 4.0 ->
    2.1 counts a prompt), and a text asked for again (a shared prefix, the same for every level) is
    fitted once. The texts are the ones `fit` gives. Counts are made one at a time: llama.cpp's
    server serves one kept-alive connection per HTTP thread, so counts side by side wait on each
    other (16 prompts built four times slower there)."""

    def __init__(self, count: TokenCounter) -> None:
        self.count = count
        # Per lead: the passage words and the tokens of the texts fitted after it so far.
        self._pace: dict[str, tuple[int, int]] = {}
        self._kept: dict[tuple[int, int, str], tuple[str, int]] = {}

    def words_per_token(self, lead: str = "") -> float | None:
        words, tokens = self._pace.get(lead) or self._pace.get("") or (0, 0)
        return words / tokens if tokens else None

    def fit(self, target: int, seed: int, lead: str = "", *, keep: bool = False) -> tuple[str, int]:
        """(text, its count) as `fit` gives it; `keep`: fitted once, however often asked."""
        key = (target, seed, lead)
        if key in self._kept:
            return self._kept[key]
        text, got, words = fit_words(target, self.count, seed, lead=lead, words_per_token=self.words_per_token(lead))
        words_so_far, tokens_so_far = self._pace.get(lead, (0, 0))
        self._pace[lead] = (words_so_far + words, tokens_so_far + got)
        if keep:
            self._kept[key] = (text, got)
        return text, got

    def fit_all(self, jobs: list[tuple[int, int, str]]) -> list[tuple[str, int]]:
        """`fit` of every (target, seed, lead), in order."""
        return [self.fit(*job) for job in jobs]
