"""What a rows file says about how it was built, and what a declaration's shape says before any hash.

A rows file records its build name (``sftpack.build``). A build's name states every parameter of its row
stream that differs from the profile's published one (:mod:`sftpack.builder.stream_names`), so the name alone gives
the profile, its loss mask and tokenizer, whether the source was the published dataset, the seed and the row
length, also for a file renamed away from its build record. The record beside the rows says more: the
dataset's hub id and commit, or its file's sha256.

    >>> dataset_text({"source": "allenai/tulu-3-sft-mixture", "revision": "b14afda60f1bbebe55d5d2fa1e4df5042f97f8be"})
    'allenai/tulu-3-sft-mixture@b14afda60f1bbebe55d5d2fa1e4df5042f97f8be'
    >>> dataset_text({"source": "file", "name": "mine.jsonl", "sha256": "ab" * 32})
    'mine.jsonl (sha256 abababababababababab…)'
"""

from __future__ import annotations

from dataclasses import dataclass

from sftpack.builder.config import DEFAULTS
from sftpack.builder.stream_names import SOURCE_TAGS, parse_stream_name, source_tag


@dataclass(frozen=True)
class BuiltAs:
    """What a build name states."""

    name: str
    model: str  # the first profile with that build name (profiles that share one share template, mask, tokenizer)
    seed: int
    row_tokens: int
    loss_mask: str
    tokenizer: str
    source: str | None = None  # the name's source tag (sftpack.builder.names.SOURCE_TAGS); None: the published dataset

    @property
    def note(self) -> str:
        return f"as the rows' build name {self.name} states (profile {self.model})"


def built_as(build_name: str | None) -> BuiltAs | None:
    """The profile and parameters ``build_name`` states, or None for a name no profile publishes."""
    from sftpack.families.profiles import list_profiles, load_profile

    if not build_name:
        return None
    base, stated = parse_stream_name(build_name)
    profile = next((p for p in map(load_profile, list_profiles()) if p.build_name == base), None)
    if profile is None:
        return None
    published = {key: profile.defaults.get(key, default) for key, default in DEFAULTS.items()}
    tokenizer = profile.published.get("tokenizer") or f"{profile.hub_repo}'s tokenizer (the profile's)"
    return BuiltAs(build_name, profile.model, stated.get("seed", published["seed"]),
                   stated.get("row_tokens", published["row_tokens"]), profile.loss_mask, str(tokenizer),
                   stated.get("source"))


def _plain(dataset: dict) -> dict:
    """A dataset as records and recipes declare it, with ``source`` the hub id where it is one (a recipe may name
    the repo only as ``name``; a record of another hub dataset has ``source: hub-dataset``)."""
    source, name = dataset.get("source"), dataset.get("name")
    if source in (None, "hub-dataset") and name:
        return {**dataset, "source": name}
    return dataset


def dataset_text(dataset: dict) -> str:
    """A declared or recorded dataset as one string a user can act on: ``REPO@COMMIT`` (the full commit) for
    the hub, the file and its sha256 (cut: the record holds it whole) for a local source."""
    dataset = _plain(dataset)
    source, name, revision, sha = (dataset.get(k) for k in ("source", "name", "revision", "sha256"))
    if source == "sample":
        return "the bundled sample" + (f" (sha256 {sha[:20]}…)" if sha else "")
    if source in ("file", "save_to_disk"):
        return f"{name or 'a local file'} (sha256 {sha[:20]}…)" if sha else f"{name or 'a local file'}"
    if source == "memory":
        return "rows handed to the build in Python"
    return f"{source}@{revision}" if revision else str(source or "an unnamed dataset")


LOCAL = ("file", "save_to_disk", "sample", "memory")


def _identity(dataset: dict) -> tuple:
    """What identifies a dataset exactly: the hub id and commit, or the local source's kind and sha256."""
    dataset = _plain(dataset)
    source = dataset.get("source")
    return (source, dataset.get("sha256") if source in LOCAL else dataset.get("revision"))


def same_dataset(measured: dict, declared: dict) -> bool:
    """Whether the measured dataset is the declared one, in all the declaration says (a recipe without a
    revision names the repo only)."""
    return all(want is None or want == got for want, got in zip(_identity(declared), _identity(measured)))


def dataset_tag(dataset: dict) -> str | None:
    """The source tag a build from ``dataset`` carries in its name (None: the published dataset; a declaration
    naming the Tulu 3 repo without a revision is taken as its pinned one)."""
    from sftpack.sources.pins import TULU_REPO, TULU_REVISION

    dataset = _plain(dataset)
    source = dataset.get("source")
    if source in LOCAL:
        return source_tag(source)
    revision = dataset.get("revision") or (TULU_REVISION if source == TULU_REPO else None)
    return source_tag("hub", source, revision)


def stated_dataset(tag: str | None) -> str:
    """What a build name's source tag says, as the verify table shows it."""
    from sftpack.sources.pins import TULU_REPO, TULU_REVISION

    return f"{TULU_REPO}@{TULU_REVISION}" if tag is None else SOURCE_TAGS[tag]


def structural_mismatch(declared: dict, rows: int, row_tokens: int) -> str | None:
    """Why the hashes cannot match whatever the rows hold: another row count or row length than declared."""
    want_rows, want_tokens = declared.get("rows"), declared.get("row_tokens")
    what = "recipe" if declared.get("kind") == "recipe" else "declaration"
    if isinstance(want_tokens, int) and want_tokens != row_tokens:
        return (f"these rows are {row_tokens:,} tokens long, the {what}'s {want_tokens:,}: the hashes cannot match; "
                f"rebuild with --row-tokens {want_tokens}")
    if isinstance(want_rows, int) and want_rows != rows:
        return (f"these rows are {rows:,} of the {what}'s {want_rows:,}: the hashes cannot match; rebuild with "
                f"--rows {want_rows}")
    return None
