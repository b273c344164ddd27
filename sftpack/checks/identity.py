"""What a rows file says about how it was built, and what a declaration's shape says before any hash.

A rows file records its build name (``sftpack.build``). A build's name states every parameter of its row
stream that differs from the profile's published one (:mod:`sftpack.builder.stream_names`), so the name alone gives
the profile, its loss mask and tokenizer, the seed and the row length, also for a file renamed away from its
build record.
"""

from __future__ import annotations

from dataclasses import dataclass

from sftpack.builder.config import DEFAULTS
from sftpack.builder.stream_names import parse_stream_name


@dataclass(frozen=True)
class BuiltAs:
    """What a build name states."""

    name: str
    model: str  # the first profile with that build name (profiles that share one share template, mask, tokenizer)
    seed: int
    row_tokens: int
    loss_mask: str
    tokenizer: str

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
                   stated.get("row_tokens", published["row_tokens"]), profile.loss_mask, str(tokenizer))


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
