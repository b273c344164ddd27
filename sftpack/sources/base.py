"""What every source shares: the ``Source`` interface, the error a row that cannot be read becomes, and the
row ids (given, or made from the row's position)."""

from __future__ import annotations

import hashlib
import stat
from dataclasses import dataclass
from pathlib import Path

from sftpack.base.aside import Aside
from sftpack.base.errors import UsageError
from sftpack.base.hashing import file_sha256
from sftpack.base.text import lone_surrogate
from sftpack.sources.sharegpt import COLUMN as SHAREGPT_COLUMN, ROLE_MAP, sharegpt_messages, sharegpt_tools


# Ids sftpack makes for rows without one live under this prefix, and a real id under it is skipped
# (``id_reserved``): a generated id can then never be a real row's id, whichever rows a build reaches.
RESERVED_ID_PREFIX = "sftpack:"


def generated_id(k: int) -> str:
    """The id of source row ``k`` when it has none (absent or null), also the name of an unreadable row.

    >>> generated_id(17)
    'sftpack:source-row-17'
    """
    return f"{RESERVED_ID_PREFIX}source-row-{k}"


def source_id(value, k: int, where: str | None = None, name: str | None = None) -> "str | RowError":
    """The id a row's ``id`` value gives: a string as is, an integer in decimal, :func:`generated_id` when
    absent or null; a :class:`RowError` for anything else (a bool, float, list, object: ``id_not_string``), for
    a string under :data:`RESERVED_ID_PREFIX` (``id_reserved``) and for one holding a lone surrogate
    (``invalid_unicode``). ``where`` names the row in the detail (default: ``row K``, written only for an error: a
    source reads its ids in its hot loop) and ``name`` (default: the generated id) in ``--strict``'s message.

    >>> source_id(7, 3), source_id(None, 3, "row 3")
    ('7', 'sftpack:source-row-3')
    >>> source_id("sftpack:source-row-9", 3, "row 3").reason
    'id_reserved'
    """
    if value is None:
        return generated_id(k)
    # the common ids first, before any message is written (an ASCII string cannot hold a surrogate)
    if isinstance(value, str) and not value.startswith(RESERVED_ID_PREFIX) and (
            value.isascii() or lone_surrogate(value) is None):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    where, name = where or f"row {k}", name or generated_id(k)
    if not isinstance(value, str):
        return RowError("id_not_string", f"{where}: the id is {_a(json_type(value))}", name)
    if value.startswith(RESERVED_ID_PREFIX):
        return RowError("id_reserved", f"{where}: the id {value[:60]!r} starts with {RESERVED_ID_PREFIX!r}, "
                        "which sftpack keeps for the ids it gives rows without one", name)
    # JSON can escape a lone surrogate; Arrow (the rows file) cannot hold it
    return RowError("invalid_unicode", f"{where}: the id holds a lone surrogate", name)


class SourceChanged(UsageError):
    """The source file was cut short (or grew) while the build read it."""


class RowError(Exception):
    """One source row is unreadable (bad JSON, not an object); the build skips and counts it."""

    def __init__(self, reason: str, detail: str, row_id: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.row_id = row_id


class _ReadWhenAsked:
    """A dataclass field that may be given an :class:`~sftpack.base.aside.Aside` (a hash being computed while the
    build starts): read, it is the Aside's result."""

    def __set_name__(self, owner, name: str):
        self.key = "_" + name

    def __get__(self, obj, owner=None):
        if obj is None:
            return None  # the field's default
        value = obj.__dict__.get(self.key)
        if isinstance(value, Aside):
            value = obj.__dict__[self.key] = value.result()
        return value

    def __set__(self, obj, value) -> None:
        obj.__dict__[self.key] = value


@dataclass
class SourceInfo:
    dataset: str  # "allenai/tulu-3-sft-mixture", "sample", the file name, or a hub dataset id
    location: str  # "hub", "sample", "file", "save_to_disk", "hub-dataset", "memory"
    revision: str | None = None
    shape: str | None = None  # "sharegpt" when the rows were read from ShareGPT's `conversations`
    roles: dict | None = None  # then: ShareGPT `from` -> role
    # a local source: its file's sha256 (a directory: of its files' names and sha256s)
    sha256: str | None = _ReadWhenAsked()


class Source:
    info: SourceInfo

    def __len__(self) -> int:
        raise NotImplementedError

    def take(self, indices) -> list[tuple[str, object]]:
        """``(id, messages)`` of each row; ``messages`` is returned as stored (checked later), or a
        :class:`RowError` in place of the pair for a row that cannot be read at all."""
        raise NotImplementedError

    memory_mapped = False  # whether reading touches a memory map (a file cut short under it: SIGBUS)

    def messages_of(self, row: dict, where: str = "a row"):
        """A JSON row's conversation: its ``messages``, or with ``info.shape == "sharegpt"`` its
        ``conversations`` read as messages; with the row's ``tools``, ``{"messages", "tools"}``. A row holding both
        shapes is refused (which one it means cannot be told)."""
        if row.get("messages") is not None and row.get(SHAREGPT_COLUMN) is not None:
            raise UsageError(f"source {self.info.dataset}: {where} holds both `messages` and `{SHAREGPT_COLUMN}`, two "
                             "conversations in one row: keep one of them")
        if self.info.shape == "sharegpt":
            messages = sharegpt_messages(row.get(SHAREGPT_COLUMN))
        else:
            messages = row.get("messages")
        tools = row.get("tools")
        if tools is not None and self.info.shape == "sharegpt":
            tools = sharegpt_tools(tools)
        return messages if tools is None else {"messages": messages, "tools": tools}

    def first_keys(self) -> list[str] | None:
        """The keys of the first row, for a source whose rows are JSON objects (None otherwise)."""
        return None

    def changed(self) -> str | None:
        """Why the files behind the source no longer match what was opened, if they do not (workers that read
        a memory map cut short die of SIGBUS; the parent asks this to say why)."""
        return None


@dataclass(frozen=True)
class SourceRequest:
    """What the build asked for: ``--source`` as given, ``--dataset-revision`` and ``--sharegpt``."""

    spec: str
    revision: str | None = None
    sharegpt: bool = False

    @property
    def path(self) -> Path:
        return Path(self.spec)

    def info(self, dataset: str, location: str, revision: str | None = None) -> SourceInfo:
        """The opened source's description, with ShareGPT's shape and role map when ``--sharegpt`` was given."""
        shape = {"shape": "sharegpt", "roles": dict(ROLE_MAP)} if self.sharegpt else {}
        return SourceInfo(dataset, location, revision, **shape)


class SourceReader:
    """One kind of source, registered under a word ``--source`` takes (``hub``) or a file suffix (``.jsonl``) in
    ``SOURCE_READERS`` (:mod:`sftpack.sources.registry`): :meth:`open` makes the :class:`Source` the build reads."""

    def open(self, request: SourceRequest) -> Source:
        raise NotImplementedError


_NOT_PLAIN = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISSOCK, "a socket"),
              (stat.S_ISBLK, "a block device"))


def local_sha256(path: Path) -> str:
    """What a local source is recorded by: a file's sha256; for a directory, the sha256 over each regular file in it
    (hidden ones aside), in path order, as ``RELATIVE-PATH NUL SHA256 NEWLINE``."""
    if not path.is_dir():
        return file_sha256(path).sha256
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file() and not any(
            part.startswith(".") for part in p.relative_to(path).parts)):
        digest.update(f"{file.relative_to(path).as_posix()}\0{file_sha256(file).sha256}\n".encode())
    return digest.hexdigest()


def check_plain_file(path: Path, spec: str) -> None:
    """Refuse, before opening it, a source that is neither a regular file nor a directory: a build reads its
    source more than once (a FIFO opened a second time waits for a writer that never comes)."""
    mode = path.stat().st_mode
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kind = next((name for test, name in _NOT_PLAIN if test(mode)), "not a file")
    raise UsageError(f"--source {spec}: not a regular file ({kind}); a build reads its source more than once, so "
                     "save it to a file first")


def check_utf8(path: Path, spec: str) -> None:
    """Refuse a JSON source in UTF-16 or UTF-32, naming its encoding and the conversion."""
    with open(path, "rb") as f:
        encoding = wide_encoding(f.read(4))
    if encoding is not None:
        raise UsageError(f"--source {spec}: the file is {encoding} text; sftpack reads JSON as UTF-8: convert it "
                         f"(iconv -f {encoding} -t UTF-8)")


# Byte-order marks of the encodings a JSON source is refused in (UTF-32's before UTF-16's: FF FE starts both).
_WIDE_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32-LE"), (b"\x00\x00\xfe\xff", "UTF-32-BE"), (b"\xff\xfe", "UTF-16-LE"),
              (b"\xfe\xff", "UTF-16-BE"))


def wide_encoding(head: bytes) -> str | None:
    """The UTF-16 or UTF-32 encoding a JSON file starting with ``head`` (its first 4 bytes) is in, or None: by
    its byte-order mark, else by the NUL bytes beside its first (ASCII) character.

    >>> wide_encoding('[{"a"'.encode("utf-16-le")), wide_encoding(b'{"a": 1}'), wide_encoding(b"")
    ('UTF-16-LE', None, None)
    """
    for bom, name in _WIDE_BOMS:
        if head.startswith(bom):
            return name
    nul = [b == 0 for b in head[:4]]
    if nul == [False, True, True, True]:
        return "UTF-32-LE"
    if nul == [True, True, True, False]:
        return "UTF-32-BE"
    if nul[:2] == [False, True]:
        return "UTF-16-LE"
    if nul[:2] == [True, False]:
        return "UTF-16-BE"
    return None


def _a(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def json_type(value) -> str:
    return {bool: "boolean", float: "number", list: "array", dict: "object", str: "string", int: "number",
            type(None): "null"}.get(type(value), type(value).__name__)
