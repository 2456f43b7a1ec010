"""docs/runner.md's table of what each way of serving supports is the one catalog/serving.py
writes from its rows, so the page cannot say a path streams or counts tokens when its row does not."""

from __future__ import annotations

from pathlib import Path

from catalog.backends import BackendKind
from catalog.serving import SERVING, capabilities_markdown

START = "<!-- capabilities: written by catalog/serving.py capabilities_markdown() -->\n"
END = "<!-- end of the capabilities -->"


def test_the_manual_holds_the_table_the_serving_rows_write():
    page = (Path(__file__).parents[2] / "docs" / "runner.md").read_text()
    assert page.split(START, 1)[1].split(END, 1)[0] == capabilities_markdown()


def test_every_way_of_serving_has_a_row_and_a_missing_capability_says_why():
    table = capabilities_markdown()
    rows = {line.split(" | ")[0].removeprefix("| ").split(" ")[0].strip("`"): line for line in table.splitlines()[2:]}
    assert set(rows) == {kind.value for kind in SERVING} == {kind.value for kind in BackendKind}
    assert "no: Bedrock's Converse cannot be told to ignore the end of the answer" in rows["bedrock"]
    assert rows["ec2-vllm"].endswith("| yes | yes | yes | yes | yes | yes |")
