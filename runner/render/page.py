"""Evidence files as one self-contained HTML page (plots inlined as PNG, tables as rendered by
each command's own `render_report`) and as Markdown (the same tables as text)."""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any

from rich.console import Console

from runner.render.plots import PLOTS
from runner.render.tables import renderer_for

# Marks on <body> how many images the browser decoded, so a test (or a reader's devtools) can tell
# a page whose plots render from one whose plots are broken.
IMAGE_CHECK = """<script>
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.images);
  document.body.dataset.images = images.length;
  document.body.dataset.imagesDecoded = images.filter(function (i) { return i.complete && i.naturalWidth > 0; }).length;
});
</script>"""
TABLE_FORMAT = '<pre class="table" style="font-family:monospace;line-height:1.2">{code}</pre>'


def table_text(evidence: dict[str, Any], *, html_out: bool) -> str:
    console = Console(record=True, width=220, file=io.StringIO(), highlight=False)
    renderer_for(evidence["command"])(evidence, console, None)
    for line in evidence.get("notices", []):
        console.print(f"note: {line}")
    if html_out:
        return console.export_html(inline_styles=True, code_format=TABLE_FORMAT)
    return console.export_text()


def png_data(figure: Any) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    return base64.b64encode(buffer.getvalue()).decode()


def render_html(files: list[tuple[Path, dict[str, Any]]]) -> str:
    evidence = [data for _, data in files]
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8"><title>Inference survey report</title>',
        "<style>body{font-family:sans-serif;margin:2em;max-width:1400px}img{max-width:100%}"
        "section{margin-bottom:2em}</style></head><body>",
        "<h1>Inference survey report</h1>",
        "<p>Rendered from evidence files: " + ", ".join(html.escape(str(p)) for p, _ in files) + "</p>",
    ]
    for name, (title, draw) in PLOTS.items():
        figure = draw(evidence)
        if figure is not None:
            parts.append(
                f'<section class="plot" id="plot-{name}"><h2>{html.escape(title)}</h2>'
                f'<img alt="{name}" src="data:image/png;base64,{png_data(figure)}"></section>'
            )
    for path, data in files:
        parts.append(
            f'<section class="evidence"><h2>{html.escape(data["command"])}: {html.escape(path.name)}</h2>'
            f"<p>started {html.escape(str(data.get('started_at')))}, git {html.escape(str((data.get('git') or {}).get('sha')))}</p>"
            f"{table_text(data, html_out=True)}</section>"
        )
    parts.append(IMAGE_CHECK)
    parts.append("</body></html>")
    return "\n".join(parts)


def render_markdown(files: list[tuple[Path, dict[str, Any]]]) -> str:
    parts = ["# Inference survey report", ""]
    for path, data in files:
        parts += [f"## {data['command']}: {path.name}", "", f"started {data.get('started_at')}", "", "```text"]
        parts += [table_text(data, html_out=False).rstrip(), "```", ""]
    return "\n".join(parts)
