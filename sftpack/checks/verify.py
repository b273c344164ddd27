"""``sftpack verify``: prove that a rows parquet holds the rows a recipe (or a build record) declares.

A declaration is either an OpenRecipes recipe (``workload.dataset.rows_sha256`` and
``workload.dataset.build.{name, rows, row_tokens, ...}``) or the ``NAME.build.yaml`` that ``sftpack build``
writes (the same fields at top level, plus exact counts, the tokenizer files used and whether they were the
pinned ones). :func:`verify_rows` recomputes every figure it can from the parquet; :func:`sftpack.checks.rebuild.verify_rebuild`
first builds the rows the declaration describes. Both return a list of :class:`Check`.

``rows_sha256`` covers the rows (tokens and loss masks) and nothing else; ``parquet_sha256`` covers the
file's bytes, which also depend on the writer (compression, pyarrow version). Rows that match with a file
that does not are reported as exactly that.

    >>> _decimals(DeclaredFloat(0.676, "0.676")), _decimals(DeclaredFloat(0.67, "0.6700"))
    (3, 4)
    >>> _ratio_matches(2135 / 3072, DeclaredFloat(0.695, "0.695"))
    True
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from pathlib import Path

from sftpack.base.errors import UsageError
from sftpack.base.hashing import file_sha256
from sftpack.builder.record import record_path_beside
from sftpack.checks.declared import HEX64, DeclaredFloat, load_declared
from sftpack.checks.identity import (
    built_as,
    dataset_tag,
    dataset_text,
    same_dataset,
    stated_dataset,
    structural_mismatch,
)
from sftpack.rows.formats import is_of_format, open_rows_file

PARQUET_FIELDS = ("parquet_sha256", "parquet_bytes")


@dataclass
class Check:
    field: str
    declared: object
    measured: object
    ok: bool | None  # None: informational, or not checkable from what is at hand
    note: str = ""


# --------------------------------------------------------------------------------------------------------
# Checking


def _decimals(value) -> int:
    text = getattr(value, "text", None) or repr(float(value))
    try:
        exponent = Decimal(text.strip()).as_tuple().exponent
    except InvalidOperation:
        exponent = Decimal(repr(float(value))).as_tuple().exponent
    return max(0, -int(exponent))


def _ratio_matches(measured: Fraction | float, declared) -> bool:
    """Equal at the declared precision: ``measured`` rounds (half-up or half-even) to ``declared``."""
    d = _decimals(declared)
    text = getattr(declared, "text", None) or repr(float(declared))
    try:
        exact = Fraction(Decimal(text.strip()))
    except InvalidOperation:
        exact = Fraction(float(declared))
    return abs(Fraction(measured) - exact) <= Fraction(1, 2 * 10**d)


def _load_record_beside(parquet: Path, declared: dict, measured_rows_sha256: str) -> tuple[dict | None, str]:
    """The build record next to the parquet, if it describes these rows and is not the declaration itself."""
    path = record_path_beside(parquet)
    if not path.is_file():
        return None, "not recorded in the rows; no build record beside the parquet"
    if Path(declared.get("path", "")).resolve() == path.resolve():
        return None, "not recorded in the rows (only the build record declares it)"
    try:
        record = load_declared(path)
    except UsageError:
        return None, f"not recorded in the rows; {path.name} is unreadable"
    if record["kind"] != "build record" or record.get("rows_sha256") != measured_rows_sha256:
        return None, f"not recorded in the rows; {path.name} describes other rows"
    return record, f"from {path.name} (rows_sha256 matches)"


def verify_rows(declared: dict, parquet_path: str | Path) -> list[Check]:
    """Recompute every figure of ``declared`` (from :func:`sftpack.checks.declared.load_declared`) that the parquet can tell."""
    parquet = Path(parquet_path)
    if not parquet.is_file():
        raise UsageError(f"{parquet}: no such file")
    rows_file = open_rows_file(parquet)  # NotSftpackRows (exit 2) for a file that is not sftpack rows
    figures = rows_file.hash()
    sha, size = file_sha256(parquet)
    build_name = rows_file.build_name
    rows, width, supervised = figures["rows"], figures["row_tokens"], figures["supervised_tokens"]
    record, record_note = _load_record_beside(parquet, declared, figures["rows_sha256"])
    checks: list[Check] = []

    def add(key, measured, ok=None, note=""):
        if key not in declared:
            return
        value = declared[key]
        checks.append(Check(key, value, measured, (value == measured) if ok is None and measured is not None else ok, note))

    add("rows_sha256", figures["rows_sha256"], note="tokens + loss masks of every row, in order")
    boundaries = getattr(rows_file, "boundaries_checked", None)
    if boundaries:  # a trainer's layout: what the trainer reads as documents was checked too (else refused above)
        checks.append(Check("boundaries", "the provenance's", rows_file.layout.boundary_column, True, boundaries))
    add("parquet_sha256", sha, note="the file's bytes")
    add("parquet_bytes", size)
    if not is_of_format(parquet, declared.get("rows_format")):  # the declared file is another format's (a recipe's)
        for check in checks:
            if check.field in PARQUET_FIELDS and check.ok is False:
                check.ok, check.note = None, "not compared: the declared file is another rows format's"
    add("name", build_name,
        note="parquet metadata sftpack.build" if build_name else "the parquet records no build name")
    checks.extend(_identity_checks(declared, record, record_note, build_name))
    add("rows", rows)
    add("row_tokens", width)
    add("padding_tokens", 0, note=f"every row holds exactly {width} tokens")
    if "supervised_token_ratio" in declared:
        value = declared["supervised_token_ratio"]
        ratio = Fraction(supervised, rows * width) if rows else Fraction(0)
        d = _decimals(value)
        checks.append(Check(
            "supervised_token_ratio", value, round(float(ratio), max(d, 6)), _ratio_matches(ratio, value),
            f"{supervised:,} / {rows * width:,}, compared at the declared {d} decimals",
        ))
    if "supervised_tokens" in declared:
        add("supervised_tokens", supervised)
    stated = built_as(build_name) if record is None else None  # a file renamed away from its record
    for key in ("seed", "loss_mask"):
        if record is not None and key in record:
            add(key, record[key], note=record_note)
        elif stated is not None:
            add(key, getattr(stated, key), note=stated.note)
        else:
            add(key, None, ok=None, note=record_note if record is None else "the build record beside says nothing")
    checks.extend(_tokenizer_checks(declared, record, record_note))
    checks.append(_pinned_check(declared, record))
    return checks


def _same_model(a: str, b: str) -> bool:
    """Two models build the same rows when their profiles share a build name (Qwen3.5's sizes do)."""
    from sftpack.families.profiles import load_profile

    if a == b:
        return True
    try:
        return load_profile(a).build_name == load_profile(b).build_name
    except UsageError:
        return False


def _identity_checks(declared: dict, record: dict | None, record_note: str, build_name: str | None) -> list[Check]:
    """The model and the dataset the rows were built from, against the declared ones: from the build record
    beside the rows (hub id and commit, or the file's sha256), else from what the rows' build name states."""
    stated = built_as(build_name) if record is None else None
    out = []
    model = declared.get("model")
    if model:
        if record is not None and record.get("model"):
            out.append(Check("model", model, record["model"], _same_model(model, record["model"]), record_note))
        elif stated is not None:
            out.append(Check("model", model, stated.model, _same_model(model, stated.model), stated.note))
        else:
            out.append(Check("model", model, None, None, record_note))
    wanted = declared.get("dataset") or {}
    if wanted.get("source") or wanted.get("name"):
        shown = dataset_text(wanted)
        if record is not None and isinstance(record.get("dataset"), dict) and record["dataset"].get("source"):
            got = record["dataset"]
            out.append(Check("dataset", shown, dataset_text(got), same_dataset(got, wanted),
                             record_note))
        elif stated is not None:
            out.append(Check("dataset", shown, stated_dataset(stated.source), stated.source == dataset_tag(wanted),
                             f"as the rows' build name {stated.name} states"))
        else:
            out.append(Check("dataset", shown, None, None, record_note))
    return out


def _tokenizer_checks(declared: dict, record: dict | None, record_note: str) -> list[Check]:
    wanted = declared.get("tokenizer_sha256") or {}
    if not wanted:
        if "tokenizer" in declared:
            return [Check("tokenizer", declared["tokenizer"], None, None, "names no file sha256s to check")]
        return []
    if record is None:
        return [Check(f"tokenizer {name} sha256", digest, None, None, record_note) for name, digest in wanted.items()]
    used = record.get("tokenizer_sha256") or {}
    out = []
    for name, digest in wanted.items():
        got = used.get(name)
        note = "sha256 of the file the build used" if got else (
            "the build used no such file: " + (", ".join(used) or "no files recorded"))
        out.append(Check(f"tokenizer {name} sha256", digest, got, got == digest, note))
    return out


def _pinned_check(declared: dict, record: dict | None) -> Check:
    """Informational: were the rows built from the pinned tokenizer files? (A build record says so.)"""
    if record is not None and "pinned" in record:
        src, where = record, "the build record of these rows"
    elif declared["kind"] == "build record" and "pinned" in declared:
        src, where = declared, "this build record"
    else:
        return Check("pinned", declared.get("pinned"), None, None,
                     "unknown: no build record of these rows says which tokenizer files built them")
    pins = src.get("pins") or {}
    detail = ", ".join(f"{f} {state}" for f, state in pins.items()) or "no pins"
    tokenizer_pinned = src.get("tokenizer_pinned", src["pinned"])
    dataset = src.get("dataset") or {}
    if src["pinned"]:
        state = "built from the pinned tokenizer files and the pinned dataset revision"
    elif tokenizer_pinned:
        state = f"built from the pinned tokenizer files but NOT the pinned dataset (source {dataset.get('source')}, revision {dataset.get('revision')})"
    else:
        state = "NOT built from the pinned tokenizer files"
    return Check("pinned", declared.get("pinned"), src["pinned"] if src is record else None, None,
                 f"{where}: {state} (tokenizer {src.get('tokenizer_source', 'source unknown')}; {detail})")


def rows_mismatch(checks: list[Check]) -> bool:
    """True when the rows_sha256 check failed (the rows are not the declared ones)."""
    return any(c.field == "rows_sha256" and c.ok is False for c in checks)


# --------------------------------------------------------------------------------------------------------
# Reporting


def verdict(checks: list[Check]) -> tuple[int, str, str]:
    """``(exit code, status, one-line verdict)``; status is "verified", "rows identical, parquet bytes differ",
    "rows identical, other figures differ" or "mismatch"."""
    failed = [c.field for c in checks if c.ok is False]
    checked = sum(c.ok is not None for c in checks)
    unchecked = [c.field for c in checks if c.ok is None and c.field not in ("pinned", "rebuilt from")]
    rows_ok = any(c.field == "rows_sha256" and c.ok for c in checks)
    if not failed:
        line = f"VERIFIED: all {checked} checked figures match; the rows are the declared rows"
        if unchecked:
            line += f" ({', '.join(unchecked)} not checkable here)"
        return 0, "verified", line
    if rows_ok and set(failed) <= set(PARQUET_FIELDS):
        return 1, "rows identical, parquet bytes differ", (
            "FAILED: rows identical, parquet bytes differ - rows_sha256 matches, so every token and loss mask is "
            "the declared one; only the file's encoding differs (another writer, compression or pyarrow version)"
        )
    if rows_ok:
        parquet = " The parquet bytes differ too." if set(failed) & set(PARQUET_FIELDS) else ""
        others = [f for f in failed if f not in PARQUET_FIELDS]
        return 1, "rows identical, other figures differ", (
            f"FAILED: rows identical (rows_sha256 matches), but {', '.join(others)} differ(s) from the declaration.{parquet}"
        )
    return 1, "mismatch", (
        f"FAILED: the rows are NOT the declared rows (rows_sha256 differs); {len(failed)} figure(s) differ: {', '.join(failed)}"
    )


def _show(value, width: int = 18) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str) and HEX64.fullmatch(value):
        return value[:16] + "…"
    if isinstance(value, DeclaredFloat):
        return value.text
    if isinstance(value, int):
        return str(value)
    text = " ".join(str(value).split())
    return text if len(text) <= 40 else text[:39] + "…"


def mark(ok: bool | None) -> str:
    return {True: "✓ OK", False: "✗ FAIL", None: "· n/a"}[ok]


def structure_of(declared: dict, checks: list[Check]) -> str | None:
    """Why the hashes cannot match, said first: another model, another dataset, or another row count or row
    length than declared (from the measured checks)."""
    what = "recipe" if declared.get("kind") == "recipe" else "declaration"
    failed = {c.field: c for c in checks if c.ok is False}
    if "model" in failed:
        return (f"these rows are another model's ({failed['model'].measured}), not the {what}'s "
                f"{failed['model'].declared}: the hashes cannot match")
    if "dataset" in failed:
        return (f"these rows come from {failed['dataset'].measured}, not the {what}'s dataset "
                f"{failed['dataset'].declared}: the hashes cannot match")
    measured = {c.field: c.measured for c in checks if c.field in ("rows", "row_tokens")}
    if not {"rows", "row_tokens"} <= measured.keys():
        return None
    return structural_mismatch(declared, measured["rows"], measured["row_tokens"])


def unchecked_dataset(declared: dict, checks: list[Check]) -> str | None:
    """What these rows cannot show of the declared dataset, and the one command that checks it, or None: a
    dataset check that failed or could not be made (no record beside the rows) leaves open whether the declared
    dataset gives the declared rows; only a rebuild from it answers that."""
    check = next((c for c in checks if c.field == "dataset"), None)
    if check is None or check.ok is True or any(c.field == "rebuilt from" for c in checks):
        return None
    wanted = declared.get("dataset") or {}
    command = f"sftpack verify {declared['path']} --rebuild"
    if wanted.get("source") in ("file", "save_to_disk"):
        return (f"not checked: the rows {dataset_text(wanted)} gives; to check it, with that file: {command} --source "
                f"{wanted.get('name') or 'PATH'}")
    if wanted.get("source") in ("sample", "memory"):
        return None
    return (f"not checked here: the rows {dataset_text(wanted)} gives (the hub's dataset, not in these files); to "
            f"check it where the Hugging Face hub is reachable: {command}")


def format_report(declared: dict, checks: list[Check], target: str) -> str:
    """The table: field, declared, measured, ✓/✗ (with OK/FAIL words, so it reads without colour), then the
    verdict."""
    rows = [("field", "declared", "measured", "check", "")]
    rows += [(c.field, _show(c.declared), _show(c.measured), mark(c.ok), "see below" if c.field == "pinned" else c.note)
             for c in checks]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [f"sftpack verify: {declared['path']} ({declared['kind']}) against {target}", ""]
    structure = structure_of(declared, checks)
    if structure:  # said first: every hash below fails by construction
        lines[1:1] = [f"  {structure}"]
    header = len(lines)
    for r in rows:
        lines.append("  " + "  ".join(r[i].ljust(widths[i]) for i in range(4)) + ("  " + r[4] if r[4] else "").rstrip())
    lines.insert(header + 1, "  " + "  ".join("-" * w for w in widths))
    _, _, line = verdict(checks)
    lines += ["", line]
    pinned = next((c for c in checks if c.field == "pinned"), None)
    if pinned is not None:
        lines.append(f"pinned: {pinned.note}")
    dataset = unchecked_dataset(declared, checks)
    if dataset:
        lines.append(dataset)
    return "\n".join(line.rstrip() for line in lines)


def report_json(declared: dict, checks: list[Check], target: str) -> dict:
    code, status, line = verdict(checks)

    def plain(v):
        return float(v) if isinstance(v, DeclaredFloat) else v

    return {
        "declared": declared["path"],
        "kind": declared["kind"],
        "target": target,
        "checks": [{"field": c.field, "declared": plain(c.declared), "measured": plain(c.measured), "ok": c.ok,
                    "note": c.note} for c in checks],
        "status": status,
        "structure": structure_of(declared, checks),
        "unchecked": unchecked_dataset(declared, checks),
        "verdict": line,
        "exit": code,
    }


