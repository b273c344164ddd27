"""``sftpack diff``: where two rows files first differ, and why.

The files are read side by side one block of rows at a time (a row group of sftpack's writer), so memory
stays at a few row groups whatever the file size; on the way every row is compared and each side's
``rows_sha256`` recomputed (a build record beside a file is trusted only when its ``rows_sha256`` matches).
Then only the neighbourhood of the first difference is read again: a few rows of tokens and provenance on
each side, from which :mod:`sftpack.checks.diff_cause` names the likely cause with its evidence.

    >>> import numpy as np
    >>> _first_difference(np.array([[1, 2, 3]]), np.array([[0, 1, 1]]), np.array([[1, 2, 4]]), np.array([[0, 1, 1]]))
    (0, 2)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from sftpack.base.errors import UsageError
from sftpack.rows.formats import open_rows_file, stem_of
from sftpack.rows.hashing import update_rows_sha256
from sftpack.rows.parquet_writer import ROWS_PER_GROUP

BLOCK = ROWS_PER_GROUP  # rows per read: one row group as sftpack writes them (a few MB at 8,192 tokens)
CONTEXT_ROWS = 3  # rows of tokens read from the first difference on: a shift shows within them
PROVENANCE_ROWS = 16  # rows of provenance read from it (ids only, cheap): a skip of a long conversation shows
CONTEXT_TOKENS = 40  # decoded tokens shown on each side of the first difference


@dataclass
class Side:
    """One of the two files: what its metadata says, and (after the scan) its rows_sha256 and build record."""

    label: str
    path: Path
    rows: int
    row_tokens: int
    build: str | None
    provenance: bool
    rows_sha256: str = ""
    record: dict = field(default_factory=dict)  # the build record beside it, only if it describes these rows
    record_note: str = ""
    vocab: object = None
    vocab_note: str = ""
    reader: object = field(default=None, repr=False)  # the file's RowsReader, opened once

    def describe(self) -> dict:
        r = self.record
        return {
            "path": str(self.path), "rows": self.rows, "row_tokens": self.row_tokens, "build": self.build,
            "rows_sha256": self.rows_sha256, "provenance": self.provenance, "build_record": self.record_note,
            **({"model": r.get("model"), "seed": r.get("seed"), "loss_mask": r.get("loss_mask"),
                "eos_token": r.get("eos_token"), "dataset": r.get("dataset")} if r else {}),
            "decoded_with": self.vocab_note,
        }


def _open(label: str, path) -> Side:
    path = Path(path)
    rows = open_rows_file(path)  # UsageError / NotSftpackRows for a missing or foreign file (exit 2)
    return Side(label, path, rows.num_rows, rows.row_tokens, rows.build_name, rows.has_provenance, reader=rows)


def _first_difference(tokens_a, mask_a, tokens_b, mask_b) -> tuple[int, int] | None:
    """(row, position) of the first token or mask value that differs between two equally shaped blocks."""
    differ = (tokens_a != tokens_b) | (mask_a != mask_b)
    rows = np.flatnonzero(differ.any(axis=1))
    if not len(rows):
        return None
    r = int(rows[0])
    return r, int(np.flatnonzero(differ[r])[0])


def _read_block(side: Side, start: int, h) -> tuple:
    """Rows ``start .. start+BLOCK`` of ``side`` (None past its end), hashed into ``h`` (unless None) on the way."""
    stop = min(start + BLOCK, side.rows)
    if start >= stop:
        return None, None
    tokens, mask = side.reader.read(slice(start, stop))  # a ParquetFile per thread: safe from a reader thread
    if h is not None:
        update_rows_sha256(h, tokens, mask)
    return tokens, mask


def _scan(a: Side, b: Side, known: dict) -> dict:
    """Compare every row, hash both sides (a side whose rows_sha256 is ``known`` is not hashed again); counts
    and the first differing (row, position). Each side is read
    by its own thread, one block ahead of the comparison: decompression and hashing release the GIL, so the
    two files are read at once, and one thread per side keeps that side's hash updates in row order. At most
    two blocks per side are in memory."""
    from concurrent.futures import ThreadPoolExecutor

    hashes = {side.label: None if side.label in known else hashlib.sha256() for side in (a, b)}
    counts = {"compared": min(a.rows, b.rows), "identical": 0, "tokens_differ": 0, "mask_only": 0}
    first = None
    starts = range(0, max(a.rows, b.rows), BLOCK)
    with ThreadPoolExecutor(1) as reader_a, ThreadPoolExecutor(1) as reader_b:
        def submit(start):
            return (reader_a.submit(_read_block, a, start, hashes[a.label]),
                    reader_b.submit(_read_block, b, start, hashes[b.label]))

        pending = submit(starts[0]) if len(starts) else None
        for i, start in enumerate(starts):
            future_a, future_b = pending
            pending = submit(starts[i + 1]) if i + 1 < len(starts) else None
            (tokens_a, mask_a), (tokens_b, mask_b) = future_a.result(), future_b.result()
            first = _compare(tokens_a, mask_a, tokens_b, mask_b, start, counts, first)
    for side in (a, b):
        side.rows_sha256 = known[side.label] if side.label in known else hashes[side.label].hexdigest()
    return {"counts": counts, "first": first}


def _compare(tokens_a, mask_a, tokens_b, mask_b, start: int, counts: dict, first):
    """Count one block's identical / token-differing / mask-only rows; the first difference so far."""
    n = min(len(tokens_a) if tokens_a is not None else 0, len(tokens_b) if tokens_b is not None else 0)
    if not n:
        return first
    tokens_a, mask_a, tokens_b, mask_b = tokens_a[:n], mask_a[:n], tokens_b[:n], mask_b[:n]
    same_tokens = (tokens_a == tokens_b).all(axis=1)
    same_mask = (mask_a == mask_b).all(axis=1)
    counts["identical"] += int((same_tokens & same_mask).sum())
    counts["tokens_differ"] += int((~same_tokens).sum())
    counts["mask_only"] += int((same_tokens & ~same_mask).sum())
    if first is None and counts["identical"] < start + n:  # some row of this block differs
        found = _first_difference(tokens_a, mask_a, tokens_b, mask_b)
        if found is not None:
            first = (start + found[0], found[1])
    return first


def _attach_record(side: Side) -> None:
    from sftpack.builder.record import read_record_beside

    record = read_record_beside(side.path)
    name = stem_of(side.path)
    if not record:
        side.record_note = f"none ({name}.build.yaml absent or unreadable)"
    elif record.get("rows_sha256") != side.rows_sha256:
        side.record_note = f"{name}.build.yaml describes other rows (its rows_sha256 differs): not used"
    else:
        side.record, side.record_note = record.to_dict(), f"{name}.build.yaml (rows_sha256 matches)"


def _attach_vocabs(a: Side, b: Side, tokenizers, model: str | None) -> None:
    """Each side's tokenizer: ``tokenizers[i]`` if given (one path serves both; None: that side's default),
    else the model its build record names, else the profile whose build name the parquet records. Failing
    that, no decoding."""
    from sftpack.checks.inspect import resolve_vocab

    if isinstance(tokenizers, (str, Path)) or tokenizers is None:
        tokenizers = [tokenizers]
    tokenizers = list(tokenizers) or [None]
    if len(tokenizers) > 2:
        raise UsageError("--tokenizer: give it once (both files) or twice (A, then B)")
    cache: dict = {}
    for i, side in enumerate((a, b)):
        tok = tokenizers[min(i, len(tokenizers) - 1)]
        who = model  # else the record beside the rows names it (its profile file, when it keeps one)
        key = (who or side.build, str(tok) if tok else None)
        if key not in cache:
            try:
                cache[key] = (resolve_vocab(side.path, who, str(tok) if tok else None), None)
            except UsageError as e:
                cache[key] = (None, str(e))
        side.vocab, error = cache[key]
        if side.vocab is None:
            side.vocab_note = f"not decoded: {error}"
        else:
            side.vocab_note = f"--tokenizer {tok}" if tok else f"the tokenizer of {who or side.build}"


def _context(side: Side, row: int) -> dict:
    """Tokens and masks of ``CONTEXT_ROWS`` rows from ``row`` on (flat), provenance from ``row - 1`` to
    ``row + PROVENANCE_ROWS``."""
    tokens, mask = side.reader.read(slice(row, min(side.rows, row + CONTEXT_ROWS)))
    prov = {}
    if side.provenance:
        prov = {p.row: p for p in side.reader.provenance_range(max(0, row - 1), min(side.rows, row + PROVENANCE_ROWS))}
    return {"row": row, "tokens": tokens.reshape(-1).copy(), "mask": mask.reshape(-1).copy(), "provenance": prov,
            "width": side.row_tokens}


def diff_rows(a, b, *, tokenizer=None, model: str | None = None, decode: bool = True,
              rows_sha256: dict | None = None) -> dict:
    """Compare rows files ``a`` and ``b`` row by row; a dict: both sides, counts, the first difference
    (row, position, what differs, conversations around it on both sides, both sides decoded there) and the
    ``cause`` of the first difference with ``evidence`` and what it ``cannot_tell``. ``identical`` is True
    when every row and the row count agree. ``rows_sha256`` (``{"A": hex}``, ``{"B": ...}`` or both) is a side's
    rows_sha256 the caller has already computed (``verify --against`` has hashed A): that side is not hashed
    again. Raises :class:`UsageError` for unusable input."""
    from sftpack.checks import diff_cause

    side_a, side_b = _open("A", a), _open("B", b)
    if side_a.row_tokens != side_b.row_tokens:
        raise UsageError(f"rows of different lengths: {side_a.path} has {side_a.row_tokens}-token rows, {side_b.path} "
                         f"{side_b.row_tokens}-token rows (diff compares files of one row length)")
    scan = _scan(side_a, side_b, rows_sha256 or {})
    for side in (side_a, side_b):
        _attach_record(side)
    counts, first = scan["counts"], scan["first"]
    result = {"a": side_a, "b": side_b, "counts": counts, "identical": first is None and side_a.rows == side_b.rows,
              "first": None, "cause": None}
    if result["identical"]:
        return _finish(result)
    if first is None:  # every compared row agrees: one file has more rows
        result["cause"] = diff_cause.row_count(side_a, side_b)
        result["first"] = {"row": counts["compared"], "position": 0, "what": "row count"}
        return _finish(result)
    if decode:
        _attach_vocabs(side_a, side_b, tokenizer, model)
    row, position = first
    context_a, context_b = _context(side_a, row), _context(side_b, row)
    result["first"] = diff_cause.describe_first(side_a, side_b, context_a, context_b, position)
    result["cause"] = diff_cause.classify(side_a, side_b, context_a, context_b, position, counts)
    if decode:
        result["first"]["decoded"] = {
            s.label: decoded_window(s, c, position, CONTEXT_TOKENS) for s, c in ((side_a, context_a), (side_b, context_b))}
    return _finish(result)


def _finish(result: dict) -> dict:
    result["a"], result["b"] = result["a"].describe(), result["b"].describe()
    result["exit"] = 0 if result["identical"] else 1
    return result


def decoded_window(side, ctx: dict, p: int, context: int) -> dict:
    """Row ``ctx.row`` decoded from ``p - context`` to ``p + context`` as inspect shows it, cut at ``p``."""
    if side.vocab is None:
        return {"note": side.vocab_note}
    try:
        return _window(side, ctx, p, context)
    except Exception as e:  # a tokenizer that does not fit these rows: say so, never a traceback
        return {"note": f"not decoded: {side.vocab_note} cannot decode these tokens ({type(e).__name__}: {e})"}


def _window(side, ctx: dict, p: int, context: int) -> dict:
    from sftpack.checks.diff_stream import stream_pieces
    from sftpack.checks.inspect import row_segments

    w = ctx["width"]
    lo, hi = max(0, p - context), min(w, p + context)
    pieces = [q for q in stream_pieces(ctx) if q["row"] == ctx["row"]] if side.provenance else [
        {"conversation": None, "start": 0, "end": w, "offset": 0}]
    out = []
    for a, b in ((lo, p), (p, hi)):
        if a >= b:
            continue
        local = [{"conversation": q["conversation"], "start": max(q["start"], a) - a, "end": min(q["end"], b) - a}
                 for q in pieces if q["start"] < b and q["end"] > a]
        covered = np.zeros(b - a, bool)
        for q in local:
            covered[q["start"] : q["end"]] = True
        segments = row_segments(ctx["tokens"][a:b], ctx["mask"][a:b], local, [int(i) for i in np.flatnonzero(~covered)],
                                side.vocab)
        out += [{**segment, "start": segment["start"] + a, "end": segment["end"] + a} for segment in segments]
    starts = {q["start"]: q for q in pieces if lo <= q["start"] < hi}
    return {"start": lo, "end": hi, "difference_at": p, "segments": out,
            "boundaries": {str(k): v["conversation"] for k, v in starts.items()}}


MARK = "▶"  # where the first difference is, in the decoded text


def _decoded_text(window: dict, color: bool) -> str:
    """A decoded window as ``inspect --row`` shows a row (its renderer: content and ids escaped), with a line at
    each conversation start and ``MARK`` at the first difference."""
    from sftpack.checks.terminal import render_segments

    def heading(seg):
        conversation = window["boundaries"].get(str(seg["start"]))
        return None if conversation is None else (conversation, "")

    text = "" if window["start"] in map(int, window["boundaries"]) else "…"
    text = render_segments(window["segments"], color, heading, text, mark=(window["difference_at"], MARK))
    return text.rstrip("\n") + "…"


def _pieces_line(pieces) -> str:
    if pieces is None:
        return "unknown (no provenance columns)"
    return " │ ".join(("▶" if p["at_difference"] else "") + f"{p['conversation']} (row {p['row']} tokens "
                      f"{p['start']}..{p['end']}{', from offset ' + str(p['offset']) if p['offset'] else ''})" for p in pieces)


def format_diff(result: dict, color: bool = False) -> str:
    """The report ``sftpack diff`` prints. Paths, build names, ids and token texts come from the files: every
    line that holds them goes through inspect's ``escape`` (the decoded text through its renderer)."""
    from sftpack.checks.terminal import escape

    a, b, counts = result["a"], result["b"], result["counts"]
    lines = ["sftpack diff"]
    for label, s in (("A", a), ("B", b)):
        lines.append(f"  {label}  {s['path']}: {s['build'] or 'unnamed build'}, {s['rows']:,} rows x {s['row_tokens']:,} "
                     f"tokens, rows_sha256 {s['rows_sha256'][:16]}…, provenance {'yes' if s['provenance'] else 'no'}")
        lines.append(f"     build record: {s['build_record']}" + (f"; model {s['model']}, seed {s['seed']}, loss mask "
                     f"{s['loss_mask']}, EOS {s['eos_token']}" if s.get("model") else ""))
    lines.append(f"  rows compared     {counts['compared']:,}: {counts['identical']:,} identical, {counts['tokens_differ']:,} "
                 f"differ in tokens, {counts['mask_only']:,} in the loss mask only")
    first, cause = result["first"], result["cause"]
    if result["identical"]:
        lines.append("IDENTICAL: every row's tokens and loss mask are the same")
        return "\n".join(map(escape, lines))
    if first.get("what") == "row count":
        lines.append(f"  first difference  row {first['row']:,}: it exists in one file only")
    else:
        what = (f"tokens differ (A {first['token_text']['A']}, B {first['token_text']['B']})" if first["what"] == "tokens" else
                f"only the loss mask differs (A {first['loss_mask']['A']}, B {first['loss_mask']['B']})")
        lines.append(f"  first difference  row {first['row']:,}, position {first['position']:,}: {what}; "
                     + ("the row's tokens are all the same" if first["row_tokens_identical"] else
                        f"the row's tokens differ from position {first['first_token_difference']:,}"))
        for label in ("A", "B"):
            at_eos = first["conversations"].get(label + "_at_eos")
            lines.append(f"  conversations {label}   {_pieces_line(first['conversations'][label])}"
                         + (f" (▶ position {first['position']:,} is the EOS after a conversation)" if at_eos else ""))
    lines.append(f"  cause             {cause['cause']}: {cause['summary']}")
    lines += [f"    evidence        {e}" for e in cause["evidence"]]
    lines += [f"    cannot tell     {e}" for e in cause.get("cannot_tell", [])]
    lines = [escape(line) for line in lines]  # before the decoded windows, whose markers are the renderer's own
    for label, window in (first.get("decoded") or {}).items():
        if "note" in window:
            lines.append(escape(f"  {label} decoded: {window['note']}"))
            continue
        lines += ["", f"  {label}, row {first['row']:,} tokens {window['start']:,}..{window['end']:,} ({MARK} = the first "
                  "difference; supervised " + ("in green" if color else "in ⟦…⟧") + ")", _decoded_text(window, color)]
    lines += ["", escape(f"DIFFERENT: {cause['cause']} - {cause['summary']}")]
    return "\n".join(lines)


__all__ = ["diff_rows", "format_diff", "BLOCK"]
