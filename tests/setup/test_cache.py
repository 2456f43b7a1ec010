"""The set-up scripts' shared cache (scripts/cache.sh), run by bash: an entry is built once per
recipe, a half-built one is built again, the clone links to it, and old entries are evicted."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

CACHE_SCRIPT = Path(__file__).parents[2] / "scripts" / "cache.sh"


def bash(cache: Path, clone: Path, script: str) -> subprocess.CompletedProcess[str]:
    prelude = f'set -euo pipefail; source "{CACHE_SCRIPT}"\nbuild() {{ echo built >> "{cache}/builds.log"; echo x > "$1/payload"; }}\n'
    return subprocess.run(
        ["bash", "-c", prelude + script],
        cwd=clone,
        env=os.environ | {"INFERENCE_CACHE_DIR": str(cache)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )


def test_an_entry_is_built_once_and_linked(tmp_path):
    cache, clone = tmp_path / "cache", tmp_path / "clone"
    clone.mkdir()
    for _ in range(2):
        bash(cache, clone, 'cached_entry python abc build; link_entry .venv "$ENTRY"')
    assert (cache / "builds.log").read_text() == "built\n"
    assert (clone / ".venv").is_symlink() and os.readlink(clone / ".venv") == str(cache / "python-abc")
    assert (clone / ".venv" / "payload").read_text() == "x\n"


def test_a_half_built_entry_is_built_again(tmp_path):
    cache, clone = tmp_path / "cache", tmp_path / "clone"
    clone.mkdir()
    (cache / "python-abc").mkdir(parents=True)  # no .complete: a build that was killed
    (cache / "python-abc" / "leftover").write_text("")
    bash(cache, clone, "cached_entry python abc build")
    assert (cache / "builds.log").read_text() == "built\n"
    assert not (cache / "python-abc" / "leftover").exists()


def test_a_folder_from_before_the_cache_becomes_a_link(tmp_path):
    cache, clone = tmp_path / "cache", tmp_path / "clone"
    (clone / ".venv").mkdir(parents=True)
    result = bash(cache, clone, 'cached_entry python abc build; link_entry .venv "$ENTRY"')
    assert (clone / ".venv").is_symlink()
    assert "was a folder of its own; it is now a link" in result.stderr


def test_old_entries_beyond_the_kept_ones_are_evicted_once_unused_for_a_day(tmp_path):
    cache, clone = tmp_path / "cache", tmp_path / "clone"
    clone.mkdir()
    day_ago = time.time() - 2 * 86400
    for name, used in [("vllm-old", day_ago), ("vllm-older", day_ago - 60), ("vllm-recent", time.time() - 60)]:
        (cache / name).mkdir(parents=True)
        (cache / name / ".complete").touch()
        os.utime(cache / name / ".complete", (used, used))
    bash(cache, clone, 'cached_entry vllm new build; evict vllm 1 "$ENTRY"')
    # The current one stays; the recent one stays (another clone may be testing on it); the two
    # unused for a day go.
    assert sorted(p.name for p in cache.iterdir() if p.is_dir()) == ["vllm-new", "vllm-recent"]
