"""The Jinja path against the native renderers: render + locate turns + mask, per conversation of the bundled sample.

For each family whose official template is in ../shared, every valid conversation of the sample is rendered and
masked twice: by the native renderer with the shipped rule, and by the template through the Jinja path with the
rule `sftpack new-model` infers from it (the build's path for a model without a native renderer). Tokenizing is the
same for both and left out. Each figure is the best of ``--repeat`` passes.

    python benchmarks/jinja_vs_native.py
    python benchmarks/jinja_vs_native.py --families qwen3_5 gemma4 --repeat 1
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sftpack.families.conversation import Skip, check_messages  # noqa: E402
from sftpack.families.mask import close_final_turn, supervised_spans  # noqa: E402
from sftpack.sources import SAMPLE_PATH  # noqa: E402
from sftpack.families.infer import infer_rule  # noqa: E402
from sftpack.families.jinja import JinjaRenderer  # noqa: E402
from sftpack.families.profiles import load_mask_rule  # noqa: E402
from sftpack.families.registry import FAMILIES  # noqa: E402
from sftpack.families.render import TemplateError  # noqa: E402

TEMPLATES = REPO.parent / "shared" / "fixtures" / "templates"
DATE = "2025-08-05"
FILES = {"qwen3_5": "qwen3_5.jinja", "qwen3": "qwen3.jinja", "gemma4": "gemma4.jinja",
         "kimi_k25": "kimi_k26.kite1.0_renamed.jinja", "gpt_oss": "gpt_oss.jinja", "minimax_m2": "minimax_m2.jinja",
         "nemotron3_nano": "nemotron3_nano.jinja", "glm4_5": "glm4_5.jinja", "glm4_7_flash": "glm4_7_flash.jinja"}
VARIABLES = {"gemma4": {"bos_token": "<bos>"}, "gpt_oss": {"strftime_now": datetime.date.fromisoformat(DATE).strftime}}


def conversations() -> list:
    out = []
    for row in pq.read_table(SAMPLE_PATH, columns=["messages"]).to_pylist():
        try:
            out.append(check_messages(row["messages"]))
        except Skip:
            continue
    return out


def seconds(render, rule, convs, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for messages in convs:
            try:
                supervised_spans(close_final_turn(render(messages), rule), messages, rule)
            except TemplateError:
                pass
        best = min(best, time.perf_counter() - start)
    return best


def encode_seconds(render, rule, vocab, convs, repeat: int) -> float:
    """Render, mask and tokenize (the build's work per conversation, one tiktoken call each)."""
    from sftpack.families.encode import ConversationEncoder

    encoder = ConversationEncoder(vocab, render, rule, "")
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for messages in convs:
            try:
                encoder(messages)
            except Exception:  # noqa: BLE001 (a skipped conversation costs what it costs)
                pass
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="*", default=list(FILES))
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    convs = conversations()
    print(f"{len(convs)} sample conversations; render + mask, best of {args.repeat}")
    print(f"{'family':16} {'native conv/s':>14} {'Jinja conv/s':>13} {'Jinja / native time':>20}")
    for family in args.families:
        template = (TEMPLATES / FILES[family]).read_text(encoding="utf-8")
        variables = VARIABLES.get(family, {})
        rule = infer_rule(template, family, variables).rule
        jinja = JinjaRenderer(template, rule, variables)
        native = FAMILIES[family].renderer({"date": DATE} if family == "gpt_oss" else None)
        t_native = seconds(native, load_mask_rule(family), convs, args.repeat)
        t_jinja = seconds(jinja, rule, convs, args.repeat)
        print(f"{family:16} {len(convs) / t_native:14,.0f} {len(convs) / t_jinja:13,.0f} {t_jinja / t_native:19.1f}x")
        if family == "qwen3_5":  # the one family here with an offline vocabulary: the whole encode, tokens included
            from sftpack.tokenizers.offline import load_offline_qwen

            vocab = load_offline_qwen()
            e_native = encode_seconds(native, load_mask_rule(family), vocab, convs, args.repeat)
            e_jinja = encode_seconds(jinja, rule, vocab, convs, args.repeat)
            print(f"{'  + tokenize':16} {len(convs) / e_native:14,.0f} {len(convs) / e_jinja:13,.0f} {e_jinja / e_native:19.1f}x")


if __name__ == "__main__":
    main()
