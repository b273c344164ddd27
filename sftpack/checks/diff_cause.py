"""Why two rows files differ: the first difference classified from the rows around it (``sftpack diff``).

The rows from the first differing row on are read as one token stream per side, with their provenance
(:mod:`sftpack.checks.diff_stream`). The causes, in the order they are told apart:

- ``loss_mask``: the tokens are the same, the masks are not (a loss-mask rule or ``step_loss_mask``);
- ``skipped_rows`` / ``seed`` / ``source_revision`` / ``order``: another conversation stands at the place
  (provenance on both sides): one side lacks conversations the other holds next (a skip), or the order is
  another permutation (the build records' seed or dataset say which);
- ``eos``: the separator between conversations differs, or one side has an EOS more or less (a shift by 1);
- ``tokenizer`` / ``template`` / ``tokens``: the same conversation at the same place with other tokens:
  decoding both sides (each with its own tokenizer) tells one tokenization of the same text from another text;
- ``shift``: without provenance, one side equals the other shifted by k tokens from the difference on.
"""

from __future__ import annotations

import numpy as np

from sftpack.checks.diff_stream import (best_shift, conversations_in_order, eos_id, piece_at, shift_text,
                                         stream_pieces, token_text)

TEMPLATE_FILES = {"chat_template.jinja"}
BOTH_FILES = {"tokenizer_config.json"}  # holds the chat template and the special tokens: tells neither alone


def describe_first(side_a, side_b, context_a: dict, context_b: dict, p: int) -> dict:
    """Row, position, what differs there, and the conversations around it on both sides."""
    w = context_a["width"]
    tokens_a, tokens_b = context_a["tokens"][:w], context_b["tokens"][:w]
    mask_a, mask_b = context_a["mask"][:w], context_b["mask"][:w]
    token_diff = np.flatnonzero(tokens_a != tokens_b)
    out = {
        "row": context_a["row"], "position": p, "what": "tokens" if tokens_a[p] != tokens_b[p] else "loss_mask",
        "tokens": {"A": int(tokens_a[p]), "B": int(tokens_b[p])},
        "token_text": {"A": token_text(side_a, tokens_a[p]), "B": token_text(side_b, tokens_b[p])},
        "loss_mask": {"A": int(mask_a[p]), "B": int(mask_b[p])},
        "row_tokens_identical": not len(token_diff),
        "first_token_difference": int(token_diff[0]) if len(token_diff) else None,
        "mask_values_differing_in_row": int((mask_a != mask_b).sum()),
        "conversations": {},
    }
    for side, ctx in ((side_a, context_a), (side_b, context_b)):
        if not side.provenance:
            out["conversations"][side.label] = None
            continue
        pieces = stream_pieces(ctx)
        i, gap = piece_at(pieces, p)
        lo = 0 if i is None else max(0, i - 1)
        around = pieces[lo : (i if i is not None else -1) + 3]
        out["conversations"][side.label] = [
            {"conversation": q["conversation"], "row": q["row"], "start": q["start"], "end": q["end"],
             "offset": q["offset"], "at_difference": (not gap and pieces.index(q) == i)} for q in around]
        out["conversations"][side.label + "_at_eos"] = gap
    return out


def row_count(side_a, side_b) -> dict:
    short, long_ = (side_a, side_b) if side_a.rows < side_b.rows else (side_b, side_a)
    return {"cause": "row_count", "summary": f"the first {short.rows:,} rows are identical; {long_.label} has "
            f"{long_.rows - short.rows:,} more ({long_.rows:,} vs {short.rows:,})",
            "evidence": ["every row both files hold is identical", "built with another --rows, or one file was cut short"],
            "cannot_tell": []}


def classify(side_a, side_b, context_a: dict, context_b: dict, p: int, counts: dict) -> dict:
    """The cause of the first difference at ``p`` of row ``context_a.row``, with evidence and what cannot be told."""
    w = context_a["width"]
    tokens_a, tokens_b = context_a["tokens"], context_b["tokens"]
    n = min(len(tokens_a), len(tokens_b))
    token_diff = np.flatnonzero(tokens_a[:w] != tokens_b[:w])
    if not len(token_diff):
        return _mask_cause(side_a, side_b, context_a, context_b, counts)
    q = int(token_diff[0])
    cannot = [f"{s.label} has no provenance columns: its conversation ids are unknown"
              for s in (side_a, side_b) if not s.provenance]
    cannot += [f"{s.label}: no build record of these rows ({s.record_note})" for s in (side_a, side_b) if not s.record]
    shift = best_shift(tokens_a, tokens_b, q)
    if side_a.provenance and side_b.provenance:
        found = _with_provenance(side_a, side_b, context_a, context_b, q, shift)
    else:
        found = _without_provenance(side_a, side_b, tokens_a, tokens_b, q, n, shift, (context_a, context_b))
    found.setdefault("evidence", [])
    found["cannot_tell"] = found.get("cannot_tell", []) + cannot
    if q != p:
        found["evidence"].append(f"the loss mask already differs at position {p}, the tokens from position {q}")
    return found


def _with_provenance(side_a, side_b, context_a, context_b, q, shift) -> dict:
    pieces_a, pieces_b = stream_pieces(context_a), stream_pieces(context_b)
    ia, gap_a = piece_at(pieces_a, q)
    ib, gap_b = piece_at(pieces_b, q)
    seq_a, seq_b = conversations_in_order(pieces_a), conversations_in_order(pieces_b)
    common = 0
    while common < min(len(seq_a), len(seq_b)) and seq_a[common] == seq_b[common]:
        common += 1
    rest_a, rest_b = seq_a[common:], seq_b[common:]
    if common == min(len(seq_a), len(seq_b)):
        evidence = [f"the same conversations in the same order on both sides: {', '.join(seq_a[:8])}"
              + (", …" if len(seq_a) > 8 else "")]
    else:
        lo = max(0, common - 1)  # the last conversation both hold, then where they part
        evidence = [f"conversations in stream order from {seq_a[lo]}: A {', '.join(seq_a[lo:lo + 8])}; "
                    f"B {', '.join(seq_b[lo:lo + 8])}"]
    if shift is not None:
        evidence.append(shift_text(shift, context_a["tokens"], context_b["tokens"], q, side_a, side_b))
    if rest_a and rest_b:  # another conversation at the same place: the order differs
        return _order_cause(side_a, side_b, rest_a, rest_b, shift, evidence)
    here_a = pieces_a[ia]["conversation"] if ia is not None else None
    here_b = pieces_b[ib]["conversation"] if ib is not None else None
    tokens_a, tokens_b = context_a["tokens"], context_b["tokens"]
    if gap_a and gap_b:
        evidence.insert(0, f"position {q} is the EOS the packer wrote after conversation {here_a} on both sides")
        return {"cause": "eos", "summary": "the EOS between conversations differs: "
                                           f"A {token_text(side_a, tokens_a[q])}, B {token_text(side_b, tokens_b[q])}",
                "evidence": evidence + _eos_records(side_a, side_b)}
    if gap_a != gap_b and shift is not None and shift[1] == 1:
        extra = "A" if gap_a else "B"
        return {"cause": "eos", "summary": f"{extra} has an EOS that the other side lacks after conversation "
                f"{here_a if gap_a else here_b}: the rest is shifted by 1 token",
                "evidence": evidence + _eos_records(side_a, side_b)}
    piece_a = pieces_a[ia] if ia is not None else None
    piece_b = pieces_b[ib] if ib is not None else None
    return _token_cause(side_a, side_b, context_a, context_b, piece_a, piece_b, q, evidence)


def _order_cause(side_a, side_b, rest_a, rest_b, shift, evidence) -> dict:
    for lacks, has, r_has, r_lacks in (("B", "A", rest_a, rest_b), ("A", "B", rest_b, rest_a)):
        for j in range(1, len(r_has)):
            m = min(len(r_lacks), len(r_has) - j)
            if m >= min(2, len(r_lacks)) and m and r_has[j : j + m] == r_lacks[:m]:
                missing = r_has[:j]
                evidence.append(f"{lacks}'s next {m} conversation(s) are {has}'s after {', '.join(missing)}")
                evidence += _skip_records(side_a, side_b)
                if shift is not None:
                    evidence.append(f"{has} holds {shift[1]:,} tokens more there: the skipped conversation(s) and EOS")
                return {"cause": "skipped_rows", "missing": {lacks: missing},
                        "summary": f"{lacks} lacks conversation(s) {', '.join(missing)} that {has} holds at this place "
                        "(skipped upstream, or dropped from its source); the order is otherwise the same", "evidence": evidence}
    evidence.append(f"A continues with {', '.join(rest_a[:4])}, B with {', '.join(rest_b[:4])}: not one order minus a skip")
    ra, rb = side_a.record, side_b.record
    if ra and rb and ra.get("seed") != rb.get("seed"):
        evidence.append(f"the build records' seeds differ: A {ra.get('seed')}, B {rb.get('seed')}")
        return {"cause": "seed", "summary": "another permutation of the conversations: a different seed", "evidence": evidence}
    if ra and rb and ra.get("dataset") != rb.get("dataset"):
        evidence.append(f"the build records' datasets differ: A {ra.get('dataset')}, B {rb.get('dataset')}")
        return {"cause": "source_revision", "summary": "another order of the conversations: a different source "
                "(revision or row count)", "evidence": evidence}
    cannot = ["seed or source revision: " + ("the build records name the same seed and dataset" if ra and rb
                                             else "no build record on both sides to compare")]
    return {"cause": "order", "summary": "another conversation order from here on (seed, source revision or skipped rows)",
            "evidence": evidence, "cannot_tell": cannot}


def _skip_records(side_a, side_b) -> list[str]:
    ra, rb = side_a.record, side_b.record
    if not (ra and rb):
        return []
    out = []
    sk_a, sk_b = (r.get("counts", {}).get("skipped") for r in (ra, rb))
    if sk_a != sk_b:
        out.append(f"the build records' skips differ: A {sk_a or {}}, B {sk_b or {}}")
    if ra.get("seed") == rb.get("seed"):
        out.append(f"both build records name seed {ra.get('seed')}")
    return out


def _eos_records(side_a, side_b) -> list[str]:
    ra, rb = side_a.record, side_b.record
    if ra and rb:
        return [f"the build records' EOS: A {ra.get('eos_token')} ({ra.get('eos_token_id')}), "
                f"B {rb.get('eos_token')} ({rb.get('eos_token_id')})"]
    return []


def _token_cause(side_a, side_b, context_a, context_b, piece_a, piece_b, q, evidence) -> dict:
    """Same conversation at the same place, other tokens: tokenizer (same text) or template (other text)."""
    conv = (piece_a or piece_b or {}).get("conversation")
    evidence.insert(0, f"the same conversation {conv} stands at position {q} on both sides, with other tokens")
    files = _file_changes(side_a.record, side_b.record)
    if files is not None:
        evidence.append("tokenizer files that differ between the build records: " + (", ".join(files) or "none"))
    if side_a.record and side_b.record and side_a.record.get("renderer") != side_b.record.get("renderer"):
        evidence.append(f"renderers differ: A {side_a.record.get('renderer')}; B {side_b.record.get('renderer')}")
    same_text, texts = None, None
    shared_vocab = side_a.vocab is not None and side_a.vocab is side_b.vocab
    if side_a.vocab is None or side_b.vocab is None:
        evidence.append("text not compared: " + "; ".join(side.vocab_note or f"{side.label} not decoded"
                                                          for side in (side_a, side_b) if side.vocab is None))
    elif not (shared_vocab and files):
        try:
            texts = [s.vocab.decode(c["tokens"][pc["flat"] : pc["flat_end"]]) if pc else ""
                     for s, c, pc in ((side_a, context_a, piece_a), (side_b, context_b, piece_b))]
        except Exception as e:  # a tokenizer that does not fit the rows
            texts = None
            evidence.append(f"text not compared: decoding failed ({type(e).__name__}: {e})")
    if texts is not None:
        common = len(_common_prefix(*texts))
        same_text = common >= min(map(len, texts)) - 4  # a cut token may decode to a replacement character
        evidence.append(f"decoded, {conv}'s text is " + ("the same on both sides (up to where the shorter piece ends)"
                  if same_text else f"different from character {common}: A {texts[0][common:common + 30]!r}, "
                  f"B {texts[1][common:common + 30]!r}"))
    if shared_vocab and files:
        evidence.append("both sides decode with one tokenizer although their tokenizer files differ: text not compared")
    if same_text is True:
        return {"cause": "tokenizer", "summary": f"the same text of {conv} tokenized differently: a tokenizer change",
                "evidence": evidence}
    renderers_differ = bool(side_a.record and side_b.record and side_a.record.get("renderer") != side_b.record.get("renderer"))
    if same_text is None and files and set(files) - TEMPLATE_FILES - BOTH_FILES:
        return {"cause": "tokenizer", "summary": f"{conv} has other tokens and the build records' tokenizer files differ "
                f"({', '.join(files)}): a tokenizer change", "evidence": evidence}
    if same_text is False or (same_text is None and files and (set(files) & TEMPLATE_FILES or renderers_differ)):
        return {"cause": "template", "summary": f"{conv} was rendered to other text: a chat-template (or source text) change",
                "evidence": evidence}
    return {"cause": "tokens", "summary": f"{conv} has other tokens: a tokenizer or chat-template change", "evidence": evidence,
            "cannot_tell": ["tokenizer or template: no tokenizer decodes both sides, and the build records do not tell "
                            "(absent, or only tokenizer_config.json differs, which holds both)"]}


def _common_prefix(a: str, b: str) -> str:
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    return a[:i]


def _file_changes(ra: dict, rb: dict) -> list[str] | None:
    if not (ra and rb):
        return None
    fa, fb = ra.get("tokenizer_files") or {}, rb.get("tokenizer_files") or {}
    return sorted(f for f in set(fa) | set(fb) if fa.get(f) != fb.get(f))


def _without_provenance(side_a, side_b, tokens_a, tokens_b, q, n, shift, contexts) -> dict:
    evidence = []
    if shift is not None:
        extra, k, _ = shift
        side, tokens = (side_a, tokens_a) if extra == "A" else (side_b, tokens_b)
        evidence.append(shift_text(shift, tokens_a, tokens_b, q, side_a, side_b))
        eos = eos_id(side, contexts)
        if k == 1 and eos is not None and tokens[q] == eos:
            return {"cause": "eos", "summary": f"{extra} has one EOS more at position {q}: the rest is shifted by 1 token",
                    "evidence": evidence}
        ends = f"; the {k:,} tokens end with an EOS: a conversation and its separator" if eos is not None and tokens[q + k - 1] == eos else ""
        return {"cause": "shift", "shift": {"extra": extra, "tokens": k},
                "summary": f"{extra} holds {k:,} tokens more at position {q} (an EOS or a conversation skipped upstream)"
                f"{ends}", "evidence": evidence,
                "cannot_tell": ["which conversation(s) were skipped: the provenance is missing"]}
    d = np.flatnonzero(tokens_a[:n] != tokens_b[:n])
    pairs = {(int(tokens_a[i]), int(tokens_b[i])) for i in d}
    if len(pairs) == 1:
        u, v = next(iter(pairs))
        evidence.append(f"every token that differs in the {n:,} tokens compared around it is A {token_text(side_a, u)} where B has "
                  f"{token_text(side_b, v)} ({len(d)} places)")
        if u == eos_id(side_a, contexts) or v == eos_id(side_b, contexts):
            return {"cause": "eos", "summary": f"the EOS between conversations differs: A {token_text(side_a, u)}, B {token_text(side_b, v)}",
                    "evidence": evidence + _eos_records(side_a, side_b)}
    return {"cause": "tokens", "summary": "other tokens from here on: a tokenizer or template change, or another order",
            "evidence": evidence, "cannot_tell": ["tokenizer/template versus order: without provenance on both sides the "
                                            "conversations at the place are unknown"]}


def _mask_cause(side_a, side_b, context_a, context_b, counts) -> dict:
    w = context_a["width"]
    mask_a, mask_b, t = context_a["mask"][:w], context_b["mask"][:w], context_a["tokens"][:w]
    d = np.flatnonzero(mask_a != mask_b)
    only_a, only_b = int((mask_a > mask_b).sum()), int((mask_b > mask_a).sum())
    evidence = [f"row {context_a['row']}: every token is the same; {len(d)} loss-mask value(s) differ ({only_a} supervised only "
          f"in A, {only_b} only in B); the first at positions "
          + ", ".join(f"{i} ({token_text(side_a, t[i])})" for i in d[:4])]
    if counts["tokens_differ"] == 0:
        evidence.append(f"no compared row differs in its tokens; {counts['mask_only']:,} differ in the loss mask only")
    ra, rb = side_a.record, side_b.record
    if ra and rb:
        evidence.append(f"the build records name loss-mask rules A {ra.get('loss_mask')}, B {rb.get('loss_mask')}"
                  + (" (the same name: the rule's file, the builder or the data's step_loss_mask changed)"
                     if ra.get("loss_mask") == rb.get("loss_mask") else ""))
    return {"cause": "loss_mask", "summary": "same tokens, another loss mask: a loss-mask rule change (or step_loss_mask)",
            "evidence": evidence, "cannot_tell": [] if (ra and rb) else ["which rule built each side: no build records"]}
