"""What a recipe or a build record declares, read once and flat (:func:`load_declared`), for ``verify`` to check.

A recipe declares ``workload.dataset.rows_sha256`` and ``workload.dataset.build.{name, rows, row_tokens, ...}``;
a build record the same figures at top level, plus exact counts and the tokenizer files it used. Floats remember
how they were written, so that a ratio is compared at its declared precision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sftpack.base.errors import UsageError
from sftpack.base.safe_yaml import SafeLoader, load_file
from sftpack.builder.record import BuildRecord

# The declared figures, in the order the table shows them.
FIGURES = ("rows_sha256", "parquet_sha256", "parquet_bytes", "name", "rows", "row_tokens", "padding_tokens",
           "supervised_token_ratio", "seed", "loss_mask", "tokenizer")


HEX64 = re.compile(r"[0-9a-fA-F]{64}")
_FILE_SHA = re.compile(r"([^\s;(),]+) sha256 ([0-9a-fA-F]{64})")


class DeclaredFloat(float):
    """A float read from YAML that remembers how it was written (``0.676`` declares 3 decimals)."""

    def __new__(cls, value: float, text: str):
        self = super().__new__(cls, value)
        self.text = text
        return self

    def __getnewargs__(self):
        return float(self), self.text


class _Loader(SafeLoader):  # size, depth and alias limits (sftpack.base.safe_yaml)
    pass


def _construct_float(loader, node):
    return DeclaredFloat(loader.construct_yaml_float(node), node.value)


_Loader.add_constructor("tag:yaml.org,2002:float", _construct_float)


def load_declared(yaml_path: str | Path) -> dict:
    """The figures a recipe or build record declares, flat: ``rows_sha256``, ``name``, ``rows``, ``row_tokens``,
    ``padding_tokens``, ``seed``, ``supervised_token_ratio``, ``parquet_sha256``, ``parquet_bytes``,
    ``loss_mask``, ``tokenizer`` (each present only if declared), plus ``kind`` ("recipe" / "build record"),
    ``path``, ``model``, ``tokenizer_sha256`` ({file: sha256} from the tokenizer text or record),
    ``pinned``/``pins``/``tokenizer_source`` (build records), ``supervised_tokens`` (a record's exact count)
    and ``dataset`` (source / revision). Raises :class:`UsageError` for anything unusable."""
    path = Path(yaml_path)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    data = load_file(path, _Loader)  # size, depth and alias limits before anything is built from it
    if not isinstance(data, dict):
        raise UsageError(f"{path}: not a recipe or build record (the YAML is not a mapping)")
    if isinstance(data.get("workload"), dict):
        declaration = _recipe_declaration(path, data)
    elif "rows_sha256" in data:
        declaration = _record_declaration(path, data)
    else:
        raise UsageError(
            f"{path}: neither an OpenRecipes recipe (workload.dataset.rows_sha256) nor an sftpack build record "
            "(rows_sha256 at top level)"
        )
    fields, where, extra = declaration.fields, declaration.where, declaration.extra
    if fields.get("rows_sha256") is None:
        raise UsageError(f"{path}: declares no {where['rows_sha256']}: nothing to verify the rows against")
    _check_types(path, fields, where)
    declared = {k: v for k, v in fields.items() if v is not None}
    for key in ("rows_sha256", "parquet_sha256"):  # hex digits compare case-insensitively (sha256sum prints lowercase)
        if key in declared:
            declared[key] = declared[key].lower()
    files = extra.get("tokenizer_files")
    if isinstance(files, dict) and files:
        tokenizer_sha256 = {str(k): str(v).lower() for k, v in files.items()}
    else:
        tokenizer_sha256 = parse_tokenizer_sha256(declared.get("tokenizer", ""))
    declared.update(
        kind=declaration.kind,
        path=str(path),
        model=data.get("model") if isinstance(data.get("model"), str) else None,
        tokenizer_sha256=tokenizer_sha256,
        dataset=declaration.dataset,
        **{k: v for k, v in extra.items() if k != "tokenizer_files" and v is not None},
    )
    return declared


@dataclass
class _Declaration:
    """What a recipe or a build record declares, before it is checked: the figures, where each one stands in the
    file, the dataset, and what only a build record says (``extra``)."""

    kind: str
    fields: dict
    where: dict
    dataset: dict
    extra: dict


def _recipe_declaration(path: Path, data: dict) -> _Declaration:
    dataset = data["workload"].get("dataset")
    if not isinstance(dataset, dict):
        raise UsageError(f"{path}: the recipe has no workload.dataset")
    build = dataset.get("build") if isinstance(dataset.get("build"), dict) else {}
    fields = {"rows_sha256": dataset.get("rows_sha256"), **{k: build.get(k) for k in FIGURES if k != "rows_sha256"}}
    where = {k: f"workload.dataset.build.{k}" for k in FIGURES}
    where["rows_sha256"] = "workload.dataset.rows_sha256"
    source = {"name": dataset.get("name"), "source": dataset.get("source"), "revision": dataset.get("revision")}
    return _Declaration("recipe", fields, where, source, {})


def _record_declaration(path: Path, data: dict) -> _Declaration:
    record = BuildRecord.from_dict(data, str(path), partial=True)
    extra = {
        "pinned": record.pinned,
        "pins": record.pins,
        "tokenizer_source": record.tokenizer_source,
        "tokenizer_files": record.tokenizer_files,
        "supervised_tokens": record.counts.supervised_tokens,
        "rows_format": record.rows_format,
    }
    source = record.dataset.to_dict() if isinstance(data.get("dataset"), dict) else {}
    return _Declaration("build record", {k: getattr(record, k) for k in FIGURES}, {k: k for k in FIGURES}, source, extra)


def _check_types(path: Path, fields: dict, where: dict) -> None:
    for key, value in fields.items():
        if value is None:
            continue
        if key in ("rows_sha256", "parquet_sha256"):
            ok = isinstance(value, str) and bool(HEX64.fullmatch(value))
            want = "a 64-digit hex sha256"
        elif key in ("rows", "row_tokens", "padding_tokens", "seed", "parquet_bytes"):
            ok = isinstance(value, int) and not isinstance(value, bool)
            want = "an integer"
        elif key == "supervised_token_ratio":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            want = "a number"
        else:
            ok = isinstance(value, str)
            want = "a string"
        if not ok:
            raise UsageError(f"{path}: {where[key]} is {value!r}, expected {want}")


def parse_tokenizer_sha256(text: str) -> dict[str, str]:
    """``FILE sha256 HEX`` pairs written in a recipe's ``tokenizer`` text.

    >>> parse_tokenizer_sha256("Kimi (revision 7e; tiktoken.model sha256 " + "b" * 64 + "; chat_template.jinja sha256 " + "8" * 64 + ")")
    {'tiktoken.model': 'bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', 'chat_template.jinja': '8888888888888888888888888888888888888888888888888888888888888888'}
    """
    return {name: hexdigest.lower() for name, hexdigest in _FILE_SHA.findall(text or "")}
