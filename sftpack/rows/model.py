"""The row model every rows format writes and reads: a :class:`Row` (tokens, loss mask, the conversation
:class:`Piece` runs it holds), a row's :class:`Provenance` read back, and what a rows file says about itself (the
metadata keys, the format versions this sftpack reads, :class:`NotSftpackRows`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from sftpack.base.errors import UsageError

# The file-level metadata keys (parquet key-value metadata; another format stores the same three facts).
META_FORMAT, META_ROW_TOKENS, META_BUILD = "sftpack.format", "sftpack.row_tokens", "sftpack.build"


READABLE_FORMATS = ("1", "2")  # versions this sftpack reads; a file claiming another is refused


class NotSftpackRows(UsageError):
    pass


def check_format_version(version: str, path) -> None:
    """Refuse, in one line, a rows file whose format version this sftpack does not read (any format)."""
    if version not in READABLE_FORMATS:
        shown = version if version.isprintable() and len(version) <= 20 else repr(version[:20])
        raise NotSftpackRows(f"{path}: rows format {shown} is not one this sftpack reads "
                             f"({', '.join(READABLE_FORMATS)}): upgrade sftpack (pip install -U sftpack)")


@dataclass
class Provenance:
    """Which source conversations a row holds. Piece ``i`` is conversation ``conversation_ids[i]``'s tokens
    ``[offsets[i], offsets[i] + lengths[i])``, at row positions ``[starts[i], starts[i] + lengths[i])``; an
    offset > 0 means the conversation began in an earlier row. Positions no piece covers are the EOS tokens
    the packer put between conversations."""

    row: int
    row_tokens: int
    conversation_ids: list[str]
    starts: list[int]
    lengths: list[int]
    offsets: list[int]

    @property
    def boundaries(self) -> list[int]:
        """Document boundaries for varlen/THD attention (``cu_seqlens`` of the row): 0, the start of every
        conversation piece, and ``row_tokens``. The EOS after a conversation stays in that conversation's
        segment (it is the token the conversation's last token predicts)."""
        return sorted({0, *self.starts, self.row_tokens})

    def pieces(self) -> list[dict]:
        return [
            {"conversation": c, "start": s, "length": n, "offset": o}
            for c, s, n, o in zip(self.conversation_ids, self.starts, self.lengths, self.offsets)
        ]


@dataclass
class Piece:
    """A run of one conversation's tokens inside a row: ``tokens[start:start+length]`` of the row are the
    conversation's tokens ``[offset, offset+length)``."""

    conversation: str
    start: int
    length: int
    offset: int


class Pieces(Sequence):
    """A row's pieces as arrays, read as :class:`Piece` objects on demand: the packer cuts a whole chunk's rows at
    once, and a Piece object per piece cost its one thread 21% of its time at 16 workers; the parquet writer takes
    the arrays as they are.

    >>> pieces = Pieces(["a", "b"], np.array([0, 5]), np.array([5, 3]), np.array([2, 0]))
    >>> pieces[1], len(pieces), pieces == [Piece("a", 0, 5, 2), Piece("b", 5, 3, 0)]
    (Piece(conversation='b', start=5, length=3, offset=0), 2, True)
    """

    __slots__ = ("ids", "starts", "lengths", "offsets")

    def __init__(self, ids: list, starts: np.ndarray, lengths: np.ndarray, offsets: np.ndarray):
        self.ids, self.starts, self.lengths, self.offsets = ids, starts, lengths, offsets

    @classmethod
    def of(cls, pieces: Sequence[Piece]) -> "Pieces":
        """``pieces`` (:class:`Piece` objects, or already Pieces) as Pieces."""
        if isinstance(pieces, Pieces):
            return pieces
        numbers = [np.array([getattr(p, f) for p in pieces], dtype=np.int64) for f in ("start", "length", "offset")]
        return cls([p.conversation for p in pieces], *numbers)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return list(self)[index]
        return Piece(self.ids[index], int(self.starts[index]), int(self.lengths[index]), int(self.offsets[index]))

    def __iter__(self):
        return map(Piece, self.ids, self.starts.tolist(), self.lengths.tolist(), self.offsets.tolist())

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    def __repr__(self) -> str:
        return repr(list(self))


@dataclass
class Row:
    tokens: np.ndarray  # int32, row_tokens
    loss_mask: np.ndarray  # uint8 0/1, row_tokens
    pieces: Sequence[Piece] = field(default_factory=list)  # a list, or Pieces

    @cached_property  # read by the sink, the writer and the supervised_tokens column: summed once
    def supervised(self) -> int:
        return int(self.loss_mask.sum())
