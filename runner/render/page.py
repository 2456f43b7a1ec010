"""Evidence files as one self-contained HTML page and as Markdown.

The page: a headline first (`headline`: per backend and model, tok/s, TTFT, accuracy and $ per
million, sorted in code, the best of each column marked; with `bench --copies` evidence, a fleet's
capacity at each copy count and its scaling efficiency), the plots (`plots`, inlined as PNG), then
every table of every evidence file as an HTML table (each command's own `render_report`, its rich
tables turned into HTML: text columns left, figures right-aligned), and which evidence files it
was rendered from. No script, nothing fetched: it opens from a file anywhere. Markdown holds the
headline and the same tables as text.

It takes the evidence of `headline.PAGE_COMMANDS` (bench, cost, quality, and the survey's steps:
survey, up, check, ask, counting, orchestrator); any other file is one line, before anything is
written. In a survey's report (its `survey` evidence among the files) the survey's own tables
come second, the user's figures beside the survey's (`beside`).
"""

from __future__ import annotations

import base64
import html
import io
import itertools
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.errors import MarkupError, StyleSyntaxError
from rich.style import Style
from rich.table import Table
from rich.text import Text

from runner.core.errors import RunnerError
from runner.core.evidence import EvidenceFile, GitCommit
from runner.measure.bench_file import BenchFile
from runner.render import plots
from runner.render.beside import SURVEY_RUNS, beside_tables
from runner.render.fleet import fleet_series
from runner.render.headline import (
    PAGE_COMMANDS,
    fleet_headline_html,
    fleet_headline_markdown,
    headline_html,
    headline_markdown,
    headline_rows,
    quality_table,
)
from runner.render.tables import TerminalOnly, nothing_measured, renderer_for

# An evidence file the page is drawn from: where it was read, and the file typed.
Source = tuple[Path, EvidenceFile]
CSS = Path(__file__).with_name("page.css")
# Columns whose text runs long (notes, errors, sources): they wrap first.
WIDE_COLUMNS = ("notes", "how", "price source", "verdict", "error", "reason")
# A text column whose longest cell is at most SHORT_TEXT characters stays on one line; one longer
# than LONG_TEXT is given room and may break anywhere; the rest wrap between words.
SHORT_TEXT = 24
LONG_TEXT = 40


# The survey's steps whose evidence the page takes only beside the survey's own (its survey.json):
# there the survey's tables put their figures beside the survey's; alone, a counting or check file
# has no headline or plot of its own, and its table is what runner.report prints without a page.
SURVEY_STEPS = ("up", "check", "ask", "counting", "orchestrator")


def check_page_sources(sources: list[Source]) -> None:
    """Every file is evidence the page can render, or one line naming it and what the page takes."""
    own = [command for command in PAGE_COMMANDS if command not in SURVEY_STEPS and command != "survey"]
    taken = ", ".join(own)
    writers = ", ".join(PAGE_COMMANDS[command] for command in own)
    in_survey = any(data.command == "survey" for _, data in sources)
    for path, data in sources:
        command = data.command
        if command not in PAGE_COMMANDS or (command in SURVEY_STEPS and not in_survey):
            raise RunnerError(
                f"{path} is {command!r} evidence: the report page (--html, --markdown) takes {taken} evidence "
                f"(written by {writers}), and a survey's steps ({', '.join(SURVEY_STEPS)}) beside its survey.json; "
                "without --html or --markdown runner.report prints any command's tables"
            )


class Capture(Console):
    """A console that keeps what a command's `render_report` prints (its tables and lines) instead
    of drawing it, so the page can render them as HTML."""

    def __init__(self) -> None:
        super().__init__(file=io.StringIO(), width=200, highlight=False, record=False)
        self.items: list[Any] = []

    def print(self, *objects: Any, **_: Any) -> None:
        # What only a terminal shows (a run's block, vllm's form) the page shows as its tables and plots.
        self.items.extend(o for o in objects if not isinstance(o, TerminalOnly))


def render_tables(evidence: EvidenceFile) -> list[Any]:
    """What the command's own report prints for this evidence (a quality file without its own
    table module gets the summary table of `headline.quality_table`)."""
    capture = Capture()
    empty = nothing_measured(evidence)
    if empty:
        return [empty]
    try:
        render = renderer_for(evidence.command)
    except RunnerError:
        if evidence.command != "quality":
            raise
        capture.print(quality_table(evidence))
    else:
        render(evidence, capture, None)
    return capture.items


def text_of(value: Any) -> Text:
    if isinstance(value, Text):
        return value
    if isinstance(value, str):
        # Cells are rich markup, escaped where they are made (a lane's `[open]`: tables.models).
        try:
            return Text.from_markup(value)
        except (MarkupError, StyleSyntaxError):
            return Text(value)
    return Text(str(value))


def markup_html(value: Any) -> str:
    """Rich markup as HTML: bold kept, red or yellow as a warning, dim as dim; the rest plain."""
    text = text_of(value)
    plain = text.plain
    cuts = sorted({0, len(plain), *[s.start for s in text.spans], *[s.end for s in text.spans]})
    parts = []
    for start, end in itertools.pairwise(cuts):
        piece = html.escape(plain[start:end])
        if not piece:
            continue
        styles = [Style.parse(s.style) if isinstance(s.style, str) else s.style for s in text.spans]
        active = [
            style for span, style in zip(text.spans, styles, strict=True) if span.start <= start and end <= span.end
        ]
        if any(style.color and style.color.name in ("red", "yellow", "bright_red") for style in active):
            piece = f'<span class="warn">{piece}</span>'
        elif any(style.dim for style in active):
            piece = f'<span class="dim">{piece}</span>'
        if any(style.bold for style in active):
            piece = f"<strong>{piece}</strong>"
        parts.append(piece)
    return "".join(parts).replace("\n", "<br>")


def cell_html(value: Any, kind: str) -> str:
    """A cell: long text in a box of its own width (so a long note does not take the width the
    figures need); figures joined by slashes (p50/p90/p99) may break after each slash when squeezed."""
    text = markup_html(value)
    if "wide" in kind:
        return f'<div class="w">{text}</div>'
    if kind != "num" or text.count("/") < 2:
        return text
    return '<span class="parts">' + text.replace("/", "/<wbr>") + "</span>"


def table_html(table: Table) -> str:
    """A rich table as an HTML table in a box that scrolls sideways on its own when it must: figures
    right-aligned on one line, short text kept on one line, long text (notes) wrapping."""
    columns = [list(column.cells) for column in table.columns]
    head, classes = [], []
    for column, cells in zip(table.columns, columns, strict=True):
        name = text_of(column.header).plain
        longest = max((len(text_of(cell).plain) for cell in cells), default=0)
        kind = "num" if column.justify == "right" else "text"
        if kind == "text" and (name in WIDE_COLUMNS or longest > LONG_TEXT):
            kind += " wide"
        elif kind == "text" and longest <= SHORT_TEXT:
            kind += " short"
        classes.append(kind)
        head.append(f'<th scope="col" class="{kind}">{markup_html(column.header)}</th>')
    body = []
    for index in range(table.row_count):
        cells = [
            f'<td class="{classes[c]}">{cell_html(columns[c][index], classes[c]) if index < len(columns[c]) else ""}</td>'
            for c in range(len(columns))
        ]
        body.append("<tr>" + "".join(cells) + "</tr>")
    caption = f"<caption>{markup_html(table.title)}</caption>" if table.title else ""
    below = f'<p class="dim">{markup_html(table.caption)}</p>' if table.caption else ""
    return (
        f'<div class="table-wrap"><table>{caption}<thead><tr>{"".join(head)}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>{below}"
    )


def item_html(item: Any) -> str:
    if isinstance(item, Table):
        return table_html(item)
    if isinstance(item, str | Text):
        return f"<p>{markup_html(item)}</p>"
    console = Console(file=io.StringIO(), width=160, record=True, highlight=False)
    console.print(item)
    return f'<pre class="text">{html.escape(console.export_text())}</pre>'


def png_data(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=plots.DPI)
    return base64.b64encode(buffer.getvalue()).decode()


def drawn_plots(sources: list[Source]) -> tuple[list[str], list[str]]:
    """(the plots as HTML figures, a line for each plot not drawn and why)."""
    drawn, not_drawn = [], []
    for name, (title, message, draw) in plots.PLOTS.items():
        with plots.style():
            figure = draw(sources)
            if isinstance(figure, str):
                not_drawn.append(f"<li><strong>{html.escape(title)}</strong>: {html.escape(figure)}</li>")
                continue
            data = png_data(figure)
        width, height = (round(v * plots.DPI / plots.DISPLAY_SCALE) for v in figure.get_size_inches())
        wide = " wide" if name in plots.WIDE else ""
        drawn.append(
            f'<figure class="plot{wide}" id="plot-{name}"><h3>{html.escape(title)}</h3>'
            f'<img alt="{html.escape(title)}: {html.escape(message)}" width="{width}" height="{height}" '
            f'src="data:image/png;base64,{data}"><figcaption>{html.escape(message)}</figcaption></figure>'
        )
    return drawn, not_drawn


def source_line(path: Path, data: EvidenceFile) -> str:
    git = data.git or GitCommit()
    sha = str(git.sha or "?")[:12] + (" (uncommitted changes)" if git.dirty else "")
    argv = " ".join(str(a) for a in data.argv)
    return (
        f"<li><code>{html.escape(str(path))}</code>: <strong>{html.escape(data.command)}</strong>, "
        f"started {html.escape(str(data.started_at))}, finished {html.escape(str(data.finished_at))}, "
        f"git {html.escape(sha)}, host {html.escape(str(data.host.platform if data.host else None))}"
        + (f", <code>python -m runner.{html.escape(data.command)} {html.escape(argv)}</code>" if argv else "")
        + (' <span class="warn">(interrupted: what was measured before Ctrl-C)</span>' if data.interrupted else "")
        + "</li>"
    )


def evidence_html(path: Path, data: EvidenceFile) -> str:
    parts = [
        f'<section class="evidence"><h3>{html.escape(data.command)}: {html.escape(path.name)}</h3>',
        f'<p class="dim">started {html.escape(str(data.started_at))}, git '
        f"{html.escape(str(data.git.sha if data.git else None))}</p>",
    ]
    parts += [item_html(item) for item in render_tables(data)]
    notices = [f"<li>{markup_html(line)}</li>" for line in data.notices]
    if data.interrupted:
        notices.append('<li class="warn">interrupted: the tables show what was measured before Ctrl-C</li>')
    if notices:
        parts.append(f'<ul class="notes">{"".join(notices)}</ul>')
    parts.append("</section>")
    return "".join(parts)


# The failures table lists at most this many; the rest are counted under it.
FAILURES_SHOWN = 100


def failures_table(sources: list[Source]) -> tuple[Table | None, int]:
    """Every timed request that failed in the bench evidence given, with its error (the tables
    give only the first error of each level): the table, and how many failed in all."""
    from runner.render.tables import add_columns

    failed = [
        (path, record)
        for path, data in sources
        if isinstance(data, BenchFile)
        for record in data.records
        if not record.ok
    ]
    if not failed:
        return None, 0
    table = Table(title=f"failed requests: {len(failed)}")
    add_columns(
        table,
        ["evidence", "backend", "level", "run", "sent", "error"],
        left=("evidence", "backend", "level", "sent", "error"),
    )
    for path, record in failed[:FAILURES_SHOWN]:
        table.add_row(
            path.name, record.backend, record.label, str(record.run), record.started_at[11:23], record.error or "-"
        )
    return table, len(failed)


def failures_html(sources: list[Source]) -> str:
    table, count = failures_table(sources)
    if table is None:
        if not any(d.command == "bench" for _, d in sources):
            return ""
        return '<section id="failures"><h2>Failed requests</h2><p class="dim">No timed request failed.</p></section>'
    more = (
        f'<p class="dim">{count - FAILURES_SHOWN} more not listed: every one is in its evidence file.</p>'
        if count > FAILURES_SHOWN
        else ""
    )
    return f'<section id="failures"><h2>Failed requests</h2>{table_html(table)}{more}</section>'


def render_html(sources: list[Source]) -> str:
    check_page_sources(sources)
    drawn, not_drawn = drawn_plots(sources)
    kinds = sorted({d.command for _, d in sources})
    short = ", ".join(f"{html.escape(p.name)} ({html.escape(d.command)})" for p, d in sources)
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<title>Inference survey report</title>",
        f"<style>{CSS.read_text()}</style></head><body><main>",
        "<h1>Inference survey report</h1>",
        f'<p class="from">Rendered from {len(sources)} evidence file{"s" if len(sources) > 1 else ""} '
        f"({html.escape(', '.join(kinds))}): {short}.</p>",
        '<section id="headline"><h2>Headline</h2>',
        headline_html(headline_rows(sources)),
        fleet_headline_html(fleet_series(sources)),
        "</section>",
        beside_html(sources),
        '<section id="plots"><h2>Plots</h2>',
        f'<div class="plots">{"".join(drawn)}</div>',
        f'<p class="dim">Not drawn:</p><ul class="notes">{"".join(not_drawn)}</ul>' if not_drawn else "",
        "</section>",
        failures_html(sources),
        '<section id="tables"><h2>Tables</h2>',
        *[evidence_html(path, data) for path, data in sources],
        "</section>",
        '<section id="sources"><h2>Evidence</h2><p class="dim">This page was rendered from:</p><ul class="sources">',
        *[source_line(path, data) for path, data in sources],
        "</ul></section>",
        "</main></body></html>",
    ]
    return "\n".join(part for part in parts if part)


def beside_html(sources: list[Source]) -> str:
    tables = beside_tables(sources)
    if not tables:
        return ""
    return (
        '<section id="beside"><h2>Beside the survey</h2>'
        f'<p class="dim">Your figures beside {html.escape(SURVEY_RUNS)}.</p>'
        + "".join(table_html(table) for table in tables)
        + "</section>"
    )


def beside_markdown(sources: list[Source]) -> list[str]:
    tables = beside_tables(sources)
    if not tables:
        return []
    console = Console(record=True, width=220, file=io.StringIO(), highlight=False)
    for table in tables:
        console.print(table)
    return ["## Beside the survey", "", f"Your figures beside {SURVEY_RUNS}.", "", "```text",
            console.export_text().rstrip(), "```", ""]  # fmt: skip


def table_text(evidence: EvidenceFile) -> str:
    console = Console(record=True, width=220, file=io.StringIO(), highlight=False)
    for item in render_tables(evidence):
        console.print(item)
    for line in evidence.notices:
        console.print(f"note: {line}")
    return console.export_text()


def render_markdown(sources: list[Source]) -> str:
    check_page_sources(sources)
    parts = ["# Inference survey report", "", "Rendered from: " + ", ".join(f"`{p}`" for p, _ in sources), ""]
    parts += ["## Headline", "", headline_markdown(headline_rows(sources)), ""]
    fleet = fleet_headline_markdown(fleet_series(sources))
    parts += [fleet, ""] if fleet else []
    parts += beside_markdown(sources)
    failed, count = failures_table(sources)
    if failed is not None:
        console = Console(record=True, width=220, file=io.StringIO(), highlight=False)
        console.print(failed)
        more = [f"{count - FAILURES_SHOWN} more not listed: every one is in its evidence file.", ""]
        parts += ["## Failed requests", "", "```text", console.export_text().rstrip(), "```", ""]
        parts += more if count > FAILURES_SHOWN else []
    for path, data in sources:
        parts += [f"## {data.command}: {path.name}", "", f"started {data.started_at}", "", "```text"]
        parts += [table_text(data).rstrip(), "```", ""]
    return "\n".join(parts)
