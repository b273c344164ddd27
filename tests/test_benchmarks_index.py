"""benchmarks/README.md is the index of the benchmarks: every script has its row, every result file it cites exists,
and every result file is cited (a run that supersedes another replaces its file)."""

from __future__ import annotations

import re
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
INDEX = BENCHMARKS / "README.md"
CITED = re.compile(r"`([\w./-]+\.(?:txt|json))`")


def test_every_script_has_its_row():
    rows = {match for match in re.findall(r"^\| `(\w+\.py)` \|", INDEX.read_text(encoding="utf-8"), re.M)}
    scripts = {path.name for path in BENCHMARKS.glob("*.py")}
    assert rows == scripts, f"benchmarks/README.md: no row for {sorted(scripts - rows)}; rows for no script {sorted(rows - scripts)}"


def test_every_result_is_cited_and_every_cited_result_exists():
    cited = set(CITED.findall(INDEX.read_text(encoding="utf-8")))
    results = {path.relative_to(BENCHMARKS / "results").as_posix() for path in (BENCHMARKS / "results").rglob("*")
               if path.is_file()}
    assert not cited - results, f"benchmarks/README.md cites results that do not exist: {sorted(cited - results)}"
    assert not results - cited, f"benchmarks/README.md does not cite {sorted(results - cited)}"
