"""``sftpack inspect``: what is inside a rows parquet, as a summary or one row decoded.

A row view shows the row's text decoded run by run (not token by token), with the supervised spans
highlighted (ANSI colour on a terminal, ``⟦…⟧`` markers otherwise), a boundary line at the start of each
conversation piece naming its source id and, for a conversation cut across rows, the offset it continues
from, and the EOS tokens the packer put between conversations (``⟨EOS …⟩``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from sftpack.base.errors import UsageError
from sftpack.builder.record import read_record_beside, record_path_beside
from sftpack.checks.identity import built_as
from sftpack.checks.terminal import SUPERVISED_CLOSE, SUPERVISED_OPEN, paint, escape, render_segments
from sftpack.rows.formats import open_rows_file


def _model_name_beside(path: Path) -> str | None:
    record = read_record_beside(path)
    return record.model if record is not None and isinstance(record.model, str) else None


def _model_beside(path: Path) -> tuple[str | None, str | None]:
    """(model, tokenizer directory) the build record beside ``path`` names: its profile file when it keeps one."""
    from sftpack.builder.model_files import model_of

    record = read_record_beside(path)
    if record is None:
        return None, None
    return model_of(record.model if isinstance(record.model, str) else None, record.model_files,
                    str(record_path_beside(path)))


def resolve_vocab(parquet: str | Path, model: str | None = None, tokenizer: str | None = None, required: bool = True):
    """The tokenizer that decodes the rows: ``--tokenizer``/``--model``, else the model named in the build
    record beside the parquet, else the profile whose build name the parquet records."""
    from sftpack.families.profiles import load_profile
    from sftpack.tokenizers.loading import load_vocab

    parquet = Path(parquet)
    rows = open_rows_file(parquet)
    if model is None:
        model, kept = _model_beside(parquet)
        tokenizer = tokenizer or kept
    if model is None:
        stated = built_as(rows.build_name)
        model = stated.model if stated is not None else None
    if model is None:
        if required:
            rows.check_masks()  # a file no reader accepts says so first: naming a model would not help
            raise UsageError(f"{parquet}: no build record beside it names the model: pass --model NAME (or --tokenizer)")
        return None
    return load_vocab(load_profile(model), tokenizer)


def _runs(mask: np.ndarray) -> list[list[int]]:
    """Half-open ``[start, end)`` runs where ``mask`` is 1."""
    padded = np.concatenate(([0], mask.astype(np.int8), [0]))
    edges = np.flatnonzero(np.diff(padded))
    return [[int(a), int(b)] for a, b in zip(edges[::2], edges[1::2])]


def row_view(path: str | Path, row: int, vocab=None) -> dict:
    """Row ``row`` as a dict: tokens, loss_mask, supervised spans, conversation pieces (with where each starts,
    its offset within the conversation and whether it goes on in the next row), document boundaries, EOS
    positions and - given a vocab - the decoded text in segments."""
    path = Path(path)
    rows = open_rows_file(path)
    nrows, width = rows.num_rows, rows.row_tokens
    tokens, mask = rows.row(row)
    prov, *nxt = rows.provenance_range(row, min(row + 2, nrows))  # the next row tells whether a piece goes on
    nxt = nxt[0] if nxt else None
    pieces = []
    for p in prov.pieces():
        end = p["start"] + p["length"]
        goes_on = bool(
            end == width and nxt is not None and nxt.conversation_ids[:1] == [p["conversation"]]
            and nxt.offsets[0] == p["offset"] + p["length"]
        )
        pieces.append({**p, "end": end, "continued": p["offset"] > 0, "continues_in_next_row": goes_on})
    covered = np.zeros(width, bool)
    for p in pieces:
        covered[p["start"] : p["end"]] = True
    eos = [int(i) for i in np.flatnonzero(~covered)]
    view = {
        "row": row,
        "rows": nrows,
        "build": rows.build_name,
        "row_tokens": width,
        "supervised_tokens": int(mask.sum()),
        "spans": _runs(mask),
        "pieces": pieces,
        "boundaries": prov.boundaries,
        "eos_positions": eos,
        "tokens": tokens.tolist(),
        "loss_mask": mask.tolist(),
    }
    if vocab is not None:
        view["eos_token"] = vocab.eos_token
        view["segments"] = row_segments(tokens, mask, pieces, eos, vocab)
    return view


def _unknown_ids(vocab, tokens) -> set[int]:
    """Ids in ``tokens`` that ``vocab`` cannot decode (negative, past the vocabulary, holes in it)."""
    unknown = set()
    tok = getattr(vocab, "tok", None)  # a tokenizers.Tokenizer decodes unknown ids to nothing: ask it
    for i in np.unique(tokens).tolist():
        if i < 0:
            unknown.add(i)
        elif tok is not None:
            if tok.id_to_token(i) is None:
                unknown.add(i)
        else:
            try:
                vocab.decode([i])
            except Exception:
                unknown.add(i)
    return unknown


def row_segments(tokens, mask, pieces, eos, vocab) -> list[dict]:
    """Maximal runs of tokens with one owner (a conversation piece or an EOS) and one mask value, decoded; a
    token the tokenizer does not know is a segment of its own with ``unknown_id`` set."""
    width = len(tokens)
    unknown = _unknown_ids(vocab, tokens)
    bad = [int(i) for i in np.flatnonzero(np.isin(tokens, list(unknown)))] if unknown else []
    cuts = {0, width, *(p["start"] for p in pieces), *(p["end"] for p in pieces), *eos, *(i + 1 for i in eos)}
    cuts.update(bad)
    cuts.update(i + 1 for i in bad)
    cuts.update(int(i) + 1 for i in np.flatnonzero(np.diff(mask.astype(np.int8))))
    cuts = sorted(c for c in cuts if 0 <= c <= width)
    owner = np.full(width, -1)
    for k, p in enumerate(pieces):
        owner[p["start"] : p["end"]] = k
    out = []
    for a, b in zip(cuts, cuts[1:]):
        k = int(owner[a])
        unknown_id = int(tokens[a]) if b == a + 1 and int(tokens[a]) in unknown else None
        out.append({
            "start": a,
            "end": b,
            "kind": "conversation" if k >= 0 else "eos",
            "conversation": pieces[k]["conversation"] if k >= 0 else None,
            "supervised": bool(mask[a]),
            "text": "" if unknown_id is not None else vocab.decode(tokens[a:b]),
            **({"unknown_id": unknown_id} if unknown_id is not None else {}),
        })
    return out


def format_row(view: dict, color: bool = False) -> str:
    """The row as text: boundary lines, supervised spans highlighted, EOS visible."""
    if "segments" not in view:
        raise UsageError("decoding the row needs a tokenizer: pass --model NAME or --tokenizer PATH")
    width, sup = view["row_tokens"], view["supervised_tokens"]
    header = (f"row {view['row']} of {view['rows']} · {escape(view['build'] or 'unnamed build')} · {width} tokens · "
              f"{sup} supervised ({sup / width:.1%}) · {len(view['pieces'])} conversation piece(s)")
    legend = ("supervised tokens in " + (paint("green", "supervised", color) if color else f"{SUPERVISED_OPEN}…{SUPERVISED_CLOSE}")
              + "; ⟨EOS⟩ = the separator between conversations; token ranges a..b are half-open")
    starts = {p["start"]: p for p in view["pieces"]}

    def heading(seg):
        piece = starts.pop(seg["start"], None)  # once per piece
        if piece is None:
            return None
        notes = []
        if piece["continued"]:
            notes.append(f"continues from offset {piece['offset']}")
        if piece["continues_in_next_row"]:
            notes.append(f"continues in row {view['row'] + 1}")
        return piece["conversation"], f"tokens {piece['start']}..{piece['end']}" + "".join(f", {n}" for n in notes)

    return "\n".join([header, legend, render_segments(view["segments"], color, heading).rstrip("\n")])


def summarize(path: str | Path) -> dict:
    """Rows, tokens, supervised ratio, conversations and pieces, conversations split across rows, and a
    histogram of supervised tokens per row. One pass over every row's tokens and mask (``rows_sha256``; the
    supervised counts per row come from it unless the file stores them), then the provenance columns."""
    path = Path(path)
    rows = open_rows_file(path)
    figures = rows.hash(per_row=True)  # refuses what hash and verify refuse; its rows_sha256 comes with the summary
    width, nrows = rows.row_tokens, rows.num_rows
    per_row = rows.stored_supervised_per_row()
    if per_row is None:  # no column: the counts of the hash pass, not a second decoding of every mask
        per_row = figures["supervised_per_row"]
    info = {
        "path": str(path),
        "build": rows.build_name,
        "model": _model_name_beside(path),
        "built_as": _built_as(path, rows.build_name),
        "rows": nrows,
        "rows_sha256": figures["rows_sha256"],
        "row_tokens": width,
        "total_tokens": nrows * width,
        "supervised_tokens": int(per_row.sum()),
        "supervised_token_ratio": float(per_row.sum() / (nrows * width)) if nrows else 0.0,
        "supervised_per_row": _stats(per_row),
    }
    # files written before provenance existed have none; provenance that does not fit its rows is refused
    provenance = rows.all_provenance() if rows.has_provenance else None
    if provenance is not None:
        # Counted by pieces, not by ids (two conversations may share an id): a conversation starts with its piece
        # at offset 0 (or, cut before the file's first row, with row 0's first piece); a continuation piece opens
        # a row and carries on the previous row's last piece, a conversation newly split when that piece began
        # it (offset 0) - else it is the same conversation running through a whole row.
        conversations = split = 0
        previous_last_offset = None
        for p in provenance:
            for i, offset in enumerate(p.offsets):
                continues = i == 0 and offset > 0
                conversations += not continues or previous_last_offset is None
                split += continues and (previous_last_offset is None or previous_last_offset == 0)
            previous_last_offset = p.offsets[-1] if p.offsets else None
        pieces = np.array([len(p.conversation_ids) for p in provenance], dtype=np.int64)
        info.update(
            conversations=conversations,
            distinct_ids=len({c for p in provenance for c in p.conversation_ids}),
            pieces=int(pieces.sum()),
            pieces_per_row=_stats(pieces),
            conversations_split_across_rows=split,
        )
    info["histogram"] = _histogram(per_row)
    return info


def _stats(values: np.ndarray) -> dict:
    if not len(values):
        return {"min": 0, "mean": 0.0, "max": 0}
    return {"min": int(values.min()), "mean": round(float(values.mean()), 2), "max": int(values.max())}


def _histogram(values: np.ndarray, bins: int = 10) -> list[dict]:
    if not len(values):
        return []
    lo, hi = int(values.min()), int(values.max()) + 1
    bins = max(1, min(bins, hi - lo))
    edges = np.linspace(lo, hi, bins + 1).round().astype(np.int64)
    edges = np.unique(edges)
    counts, _ = np.histogram(values, bins=edges)
    return [{"from": int(a), "to": int(b), "rows": int(c)} for a, b, c in zip(edges, edges[1:], counts)]


def _built_as(path: Path, build_name: str | None) -> dict | None:
    """Seed, loss mask and tokenizer: from the build record beside the file, else as its build name states."""
    record = read_record_beside(path)
    if record is not None and record.seed is not None:
        return {"seed": record.seed, "loss_mask": record.loss_mask, "tokenizer": record.tokenizer,
                "from": f"the build record beside it ({record_path_beside(path).name})"}
    stated = built_as(build_name)
    if stated is None:
        return None
    return {"seed": stated.seed, "loss_mask": stated.loss_mask, "tokenizer": stated.tokenizer, "from": stated.note}


def format_summary(info: dict) -> str:
    lines = [
        escape(f"{info['path']}: {info['build'] or 'unnamed build'}" + (f" ({info['model']})" if info.get("model") else "")),
        f"  rows            {info['rows']:,} x {info['row_tokens']:,} tokens = {info['total_tokens']:,} tokens (no padding)",
        f"  supervised      {info['supervised_tokens']:,} tokens = {info['supervised_token_ratio']:.4f}"
        f"  (per row min {info['supervised_per_row']['min']:,}, mean {info['supervised_per_row']['mean']:,}, "
        f"max {info['supervised_per_row']['max']:,})",
    ]
    built = info.get("built_as")
    if built:
        tokenizer = " ".join(str(built["tokenizer"]).split())
        tokenizer = tokenizer if len(tokenizer) <= 90 else tokenizer[:89] + "…"
        lines.append(escape(f"  built as        seed {built['seed']}, loss mask {built['loss_mask']}, tokenizer "
                            f"{tokenizer} ({built['from']})"))
    if "conversations" in info:
        ppr = info["pieces_per_row"]
        lines += [
            f"  conversations   {info['conversations']:,} distinct in {info['pieces']:,} pieces "
            f"(per row min {ppr['min']}, mean {ppr['mean']}, max {ppr['max']})"
            + (f"; only {info['distinct_ids']:,} distinct ids" if info["distinct_ids"] != info["conversations"] else ""),
            f"  split           {info['conversations_split_across_rows']:,} conversation(s) cut across rows",
        ]
    else:
        lines.append("  conversations   unknown (the parquet has no provenance columns)")
    hist = info["histogram"]
    if hist:
        lines.append("  supervised tokens per row:")
        top = max(h["rows"] for h in hist) or 1
        labels = [f"{h['from']:,}..{h['to']:,}" for h in hist]
        width = max(map(len, labels))
        for text, h in zip(labels, hist):
            bar = "█" * max(1 if h["rows"] else 0, round(40 * h["rows"] / top))
            lines.append(f"    {text.rjust(width)}  {bar} {h['rows']:,}")
    return "\n".join(lines)
