"""Exactly the tokenizer files a profile needs, said in one line and fetched into a directory.

``sftpack fetch-tokenizer MODEL DIR`` downloads them through huggingface_hub's own ``hf_hub_download`` (so
``HF_ENDPOINT``, ``HF_TOKEN``, proxies and the hub's error codes behave as everywhere else), every file at one
commit: the profile's pinned revision, or, for a profile without one, the commit its main branch points at
when the fetch starts. Each file's sha256 is compared with the profile's pin; a file that does not match is
removed, so a directory the command leaves behind holds only checked (or, without pins, recorded) files.

A profile here is anything with ``model``, ``hub_repo``, ``hub_revision``, ``pins`` and ``tokenizer_format``
(:class:`sftpack.profiles.Profile`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sftpack.base.errors import CheckFailed, UsageError
from sftpack.base.hashing import file_sha256
from sftpack.base.hub import deadline, is_commit, quiet_hub, within_deadline

# The files besides the pinned ones that a tokenizer directory may hold and a build reads when they are there.
OPTIONAL_FILES = ("tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json")
# The files a tokenizer format cannot load without (fetched even when the profile pins nothing: their sha256s are
# then recorded).
ESSENTIAL_FILES = {"tokenizer.json": ("tokenizer.json",), "kimi-tiktoken": ("tiktoken.model", "tokenizer_config.json")}


@dataclass(frozen=True)
class TokenizerFile:
    name: str
    pin: str | None  # the sha256 the profile pins, or None
    required: bool


@dataclass(frozen=True)
class FetchedFile:
    name: str
    sha256: str
    state: str  # "match" | "mismatch (removed)" | "not pinned"


def tokenizer_files(profile) -> list[TokenizerFile]:
    """The profile's pinned files, its format's main file, then the optional ones, each once."""
    names = list(dict.fromkeys([*profile.pins, *essential_files(profile)]))
    required = set(names)
    names += [name for name in OPTIONAL_FILES if name not in required]
    return [TokenizerFile(name, profile.pins.get(name), name in required) for name in names]


def essential_files(profile) -> tuple[str, ...]:
    files = ESSENTIAL_FILES.get(profile.tokenizer_format, ())
    # A profile masked through its checkpoint's own template reads that template from tokenizer_config.json.
    if profile.template == "jinja" and "tokenizer_config.json" not in files:
        files += ("tokenizer_config.json",)
    return files


def directions(profile) -> str:
    """One line (under the 400 characters an error line keeps): the repository, revision and files to get, with
    the first 8 hex digits of each pin, and the command that gets them."""
    files = ", ".join(f"{f.name} ({f.pin[:8]}…)" if f.pin else f.name for f in tokenizer_files(profile) if f.required)
    if not profile.pins:
        files += " (not pinned: the build records their sha256s)"
    where = f"{profile.hub_repo}@{profile.hub_revision or 'main (no pinned revision)'}"
    return (f"its tokenizer is {where}: {files}; `sftpack fetch-tokenizer {profile.model} DIR` gets and checks "
            "them (where the hub is reachable), then --tokenizer DIR")


def resolve_commit(profile) -> str:
    """The commit every file is fetched at: the pinned revision, else the one main points at now."""
    from huggingface_hub import HfApi

    try:
        info = HfApi().model_info(profile.hub_repo, revision=profile.hub_revision or "main")
    except Exception as e:  # huggingface_hub raises its HTTP errors, httpx's connection errors, ValueError
        raise UsageError(f"fetch-tokenizer: cannot resolve {profile.hub_repo}@{profile.hub_revision or 'main'} on "
                         f"{_endpoint()} ({type(e).__name__}: {_first_line(e)})") from e
    if not is_commit(info.sha):  # it becomes a path in the download cache: never `../elsewhere`
        shown = repr(info.sha)[:60]
        raise UsageError(f"fetch-tokenizer: {profile.hub_repo}@{profile.hub_revision or 'main'}: the hub answered the "
                         f"commit {shown}, which is not a commit id (40 hex digits); nothing was downloaded")
    if profile.hub_revision and info.sha != profile.hub_revision:
        raise UsageError(f"fetch-tokenizer: {profile.hub_repo}@{profile.hub_revision} resolved to another commit "
                         f"({info.sha}); the pinned revision must be a commit id")
    return info.sha


FETCH_DEADLINE = 600  # seconds for the whole fetch: a few tokenizer files, tens of MB at most


def fetch_tokenizer(profile, directory: str | Path) -> tuple[str, list[FetchedFile]]:
    """Download the profile's tokenizer files into ``directory`` at one commit; ``(commit, files)``, within one
    overall deadline (``SFTPACK_HUB_DEADLINE`` seconds, default 600), huggingface_hub's retry messages silenced.
    Raises :class:`CheckFailed` when a downloaded file does not match its pin. The files are downloaded into a
    hidden staging directory inside ``directory`` and moved into it only once every one is checked: a failed fetch
    leaves nothing (and no ``directory`` it created)."""
    import os
    import shutil

    target = Path(directory)
    if target.exists() and not target.is_dir():
        raise UsageError(f"fetch-tokenizer: {target} exists and is not a directory")
    created = [d for d in (target, *target.parents) if not d.exists()][::-1]
    target.mkdir(parents=True, exist_ok=True)
    staging = target / f".sftpack-fetch-{os.getpid()}"
    done = False
    try:
        with quiet_hub():
            commit, fetched = within_deadline(lambda: _fetch(profile, staging, target), deadline(FETCH_DEADLINE),
                                              f"fetch-tokenizer: {profile.hub_repo}@{profile.hub_revision or 'main'}")
        for f in fetched:
            os.replace(staging / f.name, target / f.name)
        done = True
        return commit, fetched
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        for made in reversed(created if not done else []):
            try:
                made.rmdir()
            except OSError:
                break


def _fetch(profile, staging: Path, target: Path) -> tuple[str, list[FetchedFile]]:
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    commit = resolve_commit(profile)
    fetched: list[FetchedFile] = []
    for wanted in tokenizer_files(profile):
        try:
            path = Path(hf_hub_download(profile.hub_repo, wanted.name, revision=commit, local_dir=staging))
        except EntryNotFoundError:
            if wanted.required:
                raise UsageError(f"fetch-tokenizer: {profile.hub_repo}@{commit} has no {wanted.name}, which "
                                 f"{profile.model} needs") from None
            continue
        except Exception as e:  # network, permission and disk errors: one line naming the file
            raise UsageError(f"fetch-tokenizer: cannot download {wanted.name} from {profile.hub_repo}@{commit} "
                             f"({type(e).__name__}: {_first_line(e)})") from e
        digest = file_sha256(path).sha256
        if wanted.pin is None:
            state = "not pinned"
        elif digest == wanted.pin:
            state = "match"
        else:
            path.unlink()
            state = "mismatch (removed)"
        fetched.append(FetchedFile(wanted.name, digest, state))
    bad = [f for f in fetched if f.state != "match" and f.state != "not pinned"]
    if bad:
        detail = "; ".join(f"{f.name}: expected sha256 {profile.pins[f.name]}, got {f.sha256}" for f in bad)
        raise CheckFailed(f"fetch-tokenizer: {profile.hub_repo}@{commit}: files do not match the pins of "
                          f"{profile.model} ({detail}); they were removed from {target}")
    return commit, fetched


def _endpoint() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:200] if text else ""
