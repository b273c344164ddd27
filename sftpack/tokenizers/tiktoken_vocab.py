"""The tiktoken engine of a :class:`~sftpack.tokenizers.vocab.Vocab`: :class:`TiktokenVocab`, byte-level BPE that
tiktoken can express (Qwen3.5/3.6, Kimi, gpt-oss), encoding with quicktok where it gives tiktoken's tokens
(:mod:`sftpack.tokenizers.backend`); token spans come from the tokens' byte lengths, not from offsets."""

from __future__ import annotations

import re
import unicodedata
from typing import Callable, Sequence

import numpy as np

from sftpack.base.errors import UsageError
from sftpack.base.text import lone_surrogate
from sftpack.tokenizers import encodings
from sftpack.tokenizers.backend import (engine_runs, join_runs, plan_concatenated, quicktok_for, tiktoken_name,
                                        trie_pattern)
from sftpack.tokenizers.engine_internals import build_core, special_tokens
from sftpack.tokenizers.layout import byte_layout
from sftpack.tokenizers.vocab import Batch, EncodeError, PlannedBatch, Spans, Vocab, VocabInfo

NARROW_BYTES = 1 << 31  # a batch of fewer bytes has its byte positions as int32 (TiktokenVocab.mask_planned)


def _mask_from_byte_ends(ends: np.ndarray, lens: np.ndarray, byte_spans: Spans) -> np.ndarray:
    mask = np.zeros(len(ends), dtype=np.uint8)
    if byte_spans:
        starts = ends - lens
        for lo, hi in byte_spans:
            if hi <= lo:
                continue
            # tokens overlapping [lo, hi): end > lo and start < hi
            first = int(np.searchsorted(ends, lo, side="right"))
            stop = int(np.searchsorted(starts, hi, side="left"))
            mask[first:stop] = 1
    return mask


class TiktokenVocab(Vocab):
    """Byte-level BPE through tiktoken. ``nfc=True`` applies the NFC normalizer to ordinary text, as the
    Qwen3.5 ``tokenizer.json`` does (special-token text is matched before normalization, as in HF).

    ``long_input=(max_chars, max_run)`` cuts the text before encoding the way Kimi's ``tokenization_kimi.py``
    does (see :func:`long_input_pieces`), so that tokens equal the real tokenizer's even on pathological
    inputs; texts of at most ``max_run`` characters are encoded whole, as before.
    """

    def __init__(self, encoding, eos_token: str, info: VocabInfo, nfc: bool,
                 long_input: tuple[int, int] | None = None):
        self.enc = encoding
        self.special_tokens = dict(special_tokens(encoding))
        if eos_token not in self.special_tokens:
            raise UsageError(f"eos_token {eos_token!r} is not a special token of the tokenizer")
        self.eos_token = eos_token
        self.info = info
        self.nfc = nfc
        self._allowed = frozenset(self.special_tokens)
        self.byte_lengths = encodings.byte_lengths(encoding)
        # the leftmost special token, the longest there; a trie reads a character once (gpt-oss: 0.24 µs, not 4.3)
        self._special_re = re.compile(trie_pattern(self.special_tokens))
        if long_input is not None and nfc:
            raise ValueError("long_input cutting is only defined for tokenizers without NFC")
        self.long_input = long_input
        self.fast = None  # quicktok, for the texts it encodes exactly (use_backend)

    def use_backend(self, backend: str, built: Callable[[], None] | None = None) -> None:
        # long inputs are cut by a rule of their own (Kimi's): tiktoken keeps them
        self.fast = quicktok_for(self.enc, backend, built) if self.long_input is None else None
        build_core(self.enc)  # tiktoken's tables too, before a build's workers fork

    def engine_names(self) -> tuple[str, str]:
        return tiktoken_name(), (self.fast.name if self.fast is not None else tiktoken_name())

    def _engine(self, texts: Sequence[str]):
        """The engine for ``texts`` (quicktok when it is exact on all of them) and whether it is quicktok."""
        if self.fast is not None and self.fast.exact(texts).all():
            return self.fast, True
        return self.enc, False

    def _encode(self, text: str, engine=None) -> list[int]:
        if self.long_input is None or len(text) <= self.long_input[1]:
            if engine is self.fast and engine is not None:
                return engine.encode(text)
            return self.enc.encode(text, allowed_special=self._allowed)
        ids: list[int] = []
        for piece in long_input_pieces(text, *self.long_input):
            ids.extend(self.enc.encode(piece, allowed_special=self._allowed))
        return ids

    def plan_batch(self, texts: Sequence[str], spans: Sequence[Spans]) -> PlannedBatch:
        """One engine call for the whole batch. Every rendered conversation starts with a special token
        (``<|im_start|>``, ``<bos>``, ``<|im_user|>``...), which tiktoken and HF split on before anything
        else, so the tokens of the concatenated texts are exactly the concatenated tokens of each text. When
        that does not hold (or for NFC-changing text, long Kimi inputs, invalid Unicode), fall back to one
        text at a time."""
        joined = "".join(texts)
        ascii_only = joined.isascii()
        if (
            not texts
            or any(self._special_re.match(t) is None for t in texts[1:])
            or (self.long_input is not None and any(len(t) > self.long_input[1] for t in texts))
            or (self.nfc and not ascii_only and not _all_nfc(texts))
        ):
            return PlannedBatch(texts, spans)
        layout = byte_layout(texts, spans, ascii_only, self.fast)
        if layout is None:  # a lone surrogate: named per text
            return PlannedBatch(texts, spans)
        text_start, lo, hi, exact = layout
        run, fast = plan_concatenated(self.enc, self.fast, texts, joined, exact)
        return PlannedBatch(texts, spans, run, fast, text_start, lo, hi)

    def tokenize_planned(self, plan: PlannedBatch):
        if plan.run is None:
            return self._one_by_one(plan.texts, plan.spans)
        try:
            return engine_runs(self.enc, self.fast, plan.run)
        except UnicodeEncodeError:
            return self._one_by_one(plan.texts, plan.spans)

    def mask_planned(self, plan: PlannedBatch, tokenized) -> Batch:
        if isinstance(tokenized, Batch):
            return tokenized
        ids = join_runs(plan.run, tokenized)
        # byte positions as int32 wherever the batch's bytes allow it (a chunk is a few MB): half the mask's time
        text_start, lo, hi = plan.text_start, plan.lo, plan.hi
        narrow = text_start[-1] < NARROW_BYTES
        dtype = np.int32 if narrow else np.int64
        if narrow:
            text_start, lo, hi = (a.astype(np.int32) for a in (text_start, lo, hi))
        lens = self.byte_lengths[ids]
        ends = np.cumsum(lens, dtype=dtype)
        starts = ends - lens
        n = len(ids)
        # tokens overlapping [lo, hi): end > lo and start < hi, marked with a difference array
        first = np.searchsorted(ends, lo, side="right")
        stop = np.searchsorted(starts, hi, side="left")
        keep = stop > first
        diff = np.zeros(n + 1, dtype=np.int32)
        np.add.at(diff, first[keep], 1)
        np.add.at(diff, stop[keep], -1)
        mask = (np.cumsum(diff[:n], dtype=np.int32) > 0).view(np.uint8)
        boundaries = np.searchsorted(starts, text_start, side="left")
        boundaries[-1] = n
        if not np.array_equal(np.append(starts, ends[-1] if n else 0)[boundaries], text_start):
            return self._one_by_one(plan.texts, plan.spans)  # a token crosses two texts: encode one by one
        return Batch(np.diff(boundaries).astype(np.int64), ids, mask, {}, plan.fast)

    def encode_masked(self, text: str, spans: Spans) -> tuple[np.ndarray, np.ndarray]:
        return self._encode_one(text, spans)[:2]

    def _encode_one(self, text: str, spans: Spans) -> tuple[np.ndarray, np.ndarray, bool]:
        if text.isascii():
            byte_spans = spans
            engine, fast = self._engine([text])
            ids = self._encode(text, engine)
        elif (bad := lone_surrogate(text)) is not None:  # tiktoken would silently write U+FFFD for it
            raise EncodeError(f"text is not valid Unicode (lone surrogate at char {bad})")
        elif self.nfc and not unicodedata.is_normalized("NFC", text):
            return self._encode_normalizing(text, spans)
        else:
            engine, fast = self._engine([text])
            try:
                ids = self._encode(text, engine)
            except UnicodeEncodeError as e:
                raise EncodeError(f"text is not valid Unicode ({e.reason} at char {e.start})") from e
            byte_spans = [(_char_to_byte(text, a), _char_to_byte(text, b)) for a, b in spans]
        ids = np.asarray(ids, dtype=np.int32)
        lens = self.byte_lengths[ids]
        return ids, _mask_from_byte_ends(np.cumsum(lens), lens, byte_spans), fast

    def _encode_normalizing(self, text: str, spans: Spans) -> tuple[np.ndarray, np.ndarray, bool]:
        """Slow path for text that NFC changes: split out special tokens (matched on the raw text, as HF's
        added tokens are), NFC-normalize the rest, and carry span boundaries into normalized coordinates."""
        cuts = sorted({p for span in spans for p in span})
        pieces: list[tuple[bool, str]] = []  # (is_special, text)
        boundary_bytes: dict[int, int] = {}
        pos = 0
        out_bytes = 0

        def ordinary(lo: int, hi: int) -> None:
            nonlocal out_bytes
            inner = [c for c in cuts if lo < c < hi]
            edges = [lo, *inner, hi]
            normalized = unicodedata.normalize("NFC", text[lo:hi])
            parts = [unicodedata.normalize("NFC", text[a:b]) for a, b in zip(edges, edges[1:])]
            if "".join(parts) != normalized:
                raise EncodeError("Unicode normalization merges characters across a turn boundary")
            acc = out_bytes
            for edge, part in zip(edges[1:], parts):
                acc += len(part.encode("utf-8", "surrogatepass"))
                boundary_bytes[edge] = acc
            boundary_bytes[lo] = out_bytes
            pieces.append((False, normalized))
            out_bytes = acc

        for m in self._special_re.finditer(text):
            if m.start() > pos:
                ordinary(pos, m.start())
            boundary_bytes[m.start()] = out_bytes
            pieces.append((True, m.group()))
            out_bytes += len(m.group().encode("utf-8"))
            boundary_bytes[m.end()] = out_bytes
            pos = m.end()
        if pos < len(text) or not text:
            ordinary(pos, len(text))
        ids: list[int] = []
        # NFC can turn a text quicktok encodes exactly into one it does not (a character that decomposes into a
        # combining mark): the engine is chosen on the normalized pieces
        engine, fast = self._engine([piece for special, piece in pieces if not special])
        try:
            for special, piece in pieces:
                if special:
                    ids.append(self.special_tokens[piece])
                else:
                    ids.extend(engine.encode_ordinary(piece))
        except UnicodeEncodeError as e:
            raise EncodeError(f"text is not valid Unicode ({e.reason})") from e
        byte_spans = [(boundary_bytes[a], boundary_bytes[b]) for a, b in spans]
        arr = np.asarray(ids, dtype=np.int32)
        lens = self.byte_lengths[arr]
        return arr, _mask_from_byte_ends(np.cumsum(lens), lens, byte_spans), fast

    def decode(self, ids) -> str:
        return self.enc.decode([int(i) for i in ids], errors="replace")


def long_input_pieces(text: str, max_chars: int, max_run: int):
    """The pieces Kimi's ``TikTokenTokenizer.encode`` encodes one by one: ``max_chars``-character chunks, each
    cut so that no piece holds more than ``max_run`` consecutive whitespace (``str.isspace``) or
    non-whitespace characters - a longer run is cut every ``max_run`` characters from its start. The same
    pieces as ``tests/helpers/kimi_reference.py``'s ``kimi_encode`` (a per-character loop), found with a regex
    (``\\s`` is exactly ``str.isspace``; the lookbehinds let a match start only where a run starts, which keeps
    the search linear)."""
    long_run = re.compile(r"(?<!\s)\s{%d,}|(?<!\S)\S{%d,}" % (max_run + 1, max_run + 1))
    for chunk_start in range(0, len(text), max_chars):
        chunk = text[chunk_start : chunk_start + max_chars]
        start = 0
        for m in long_run.finditer(chunk):  # maximal runs longer than max_run
            for cut in range(m.start() + max_run, m.end(), max_run):
                yield chunk[start:cut]
                start = cut
        yield chunk[start:]


def _all_nfc(texts: Sequence[str]) -> bool:
    # Per text, skipping ASCII ones: is_normalized falls back to a full normalization when a text holds a
    # character that may compose (e.g. a combining mark), so checking the joined batch would normalize all of it.
    return all(t.isascii() or unicodedata.is_normalized("NFC", t) for t in texts)


def _char_to_byte(text: str, index: int) -> int:
    return len(text[:index].encode("utf-8"))
