"""Any Hugging Face ``tokenizers`` tokenizer as a :class:`~sftpack.tokenizers.vocab.Vocab`: supervision from
its character offsets (Gemma 4 and every tokenizer tiktoken cannot express)."""

from __future__ import annotations

import numpy as np

from sftpack.base.errors import UsageError
from sftpack.tokenizers.vocab import EncodeError, Spans, Vocab, VocabInfo


class HFVocab(Vocab):
    """Any Hugging Face ``tokenizers.Tokenizer``; supervision from its character offsets."""

    def __init__(self, tokenizer, eos_token: str, info: VocabInfo):
        self.tok = tokenizer
        self.special_tokens = {t.content: i for i, t in tokenizer.get_added_tokens_decoder().items()}
        if eos_token not in self.special_tokens:
            found = tokenizer.token_to_id(eos_token)
            if found is None:
                raise UsageError(f"eos_token {eos_token!r} is not in the tokenizer")
            self.special_tokens[eos_token] = found
        self.eos_token = eos_token
        self.info = info

    def encode_masked(self, text: str, spans: Spans) -> tuple[np.ndarray, np.ndarray]:
        try:
            enc = self.tok.encode(text, add_special_tokens=False)
        except (TypeError, ValueError) as e:  # tokenizers raises TypeError on lone surrogates
            raise EncodeError(f"text cannot be tokenized ({e})") from e
        ids = np.asarray(enc.ids, dtype=np.int32)
        mask = np.zeros(len(ids), dtype=np.uint8)
        if spans and len(ids):
            offsets = np.asarray(enc.offsets, dtype=np.int64).reshape(-1, 2)
            start, end = offsets[:, 0], offsets[:, 1]
            for lo, hi in spans:
                if hi > lo:  # an empty span supervises nothing (as in TiktokenVocab)
                    mask |= ((end > start) & (end > lo) & (start < hi)).astype(np.uint8)
        return ids, mask

    def engine_names(self) -> tuple[str, str]:
        from importlib.metadata import version

        return (f"tokenizers {version('tokenizers')}",) * 2

    def decode(self, ids) -> str:
        return self.tok.decode([int(i) for i in ids], skip_special_tokens=False)
