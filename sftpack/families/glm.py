"""Native renderers of the GLM-4.5 and GLM-4.7-Flash chat templates (text conversations, no tools, no generation
prompt, the templates' defaults: ``enable_thinking`` and ``clear_thinking`` not passed).

Byte-identical to ``glm4_5.jinja`` / ``glm4_7_flash.jinja`` rendered by transformers on conversations of
``system``, ``user`` and ``assistant`` messages with string content; tests compare them on thousands of
conversations.

What the templates do with such a conversation: ``[gMASK]<sop>`` (no turn), then for each message its role
token - ``<|system|>``, ``<|user|>``, ``<|assistant|>`` - and its content. GLM writes **no end-of-turn token**:
a turn ends where the next role token starts (the model stops by emitting one). So an assistant turn's
``end`` here includes the role token that follows it (that token is also where the next turn starts); the
last turn of a conversation ends with the text. System and user content is written verbatim (GLM-4.5 puts a
``\\n`` after the role token). Assistant content is split at ``</think>`` (reasoning: before the first
``</think>``, after the last ``<think>`` in it, outer newlines removed; answer: after the last ``</think>``,
leading newlines removed) and written as

- GLM-4.5: ``\\n<think>{reasoning.strip()}</think>`` for a turn after the last user message with reasoning,
  else ``\\n<think></think>``; then ``\\n{answer.strip()}`` when the stripped answer is not empty;
- GLM-4.7-Flash: ``<think>{reasoning.strip()}</think>`` likewise, else ``</think>``; then ``answer.strip()``.

    >>> r = render_glm4_5([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": " Yo "}, {"role": "user", "content": "?"}])
    >>> r.text
    '[gMASK]<sop><|user|>\\nHi<|assistant|>\\n<think></think>\\nYo<|user|>\\n?'
    >>> r.turns[1]
    Turn(message=1, role='assistant', start=23, body=36, end=63)
"""

from __future__ import annotations

from sftpack.families.family import Family
from sftpack.families.render import Rendered, TemplateError, Turn, split_reasoning

PREFIX = "[gMASK]<sop>"
ROLE_TOKENS = {"system": "<|system|>", "user": "<|user|>", "assistant": "<|assistant|>"}


def _assistant_glm4_5(content: str, keeps_reasoning: bool) -> str:
    reasoning, answer = split_reasoning(content)
    think = "\n<think>" + reasoning.strip() + "</think>" if keeps_reasoning and reasoning else "\n<think></think>"
    return think + ("\n" + answer.strip() if answer.strip() else "")


def _assistant_glm4_7(content: str, keeps_reasoning: bool) -> str:
    reasoning, answer = split_reasoning(content)
    think = "<think>" + reasoning.strip() + "</think>" if keeps_reasoning and reasoning else "</think>"
    return think + answer.strip()


def _render(messages: list, family: str, newline: str, assistant) -> Rendered:
    last_user = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=-1)
    parts: list[str] = [PREFIX]
    starts: list[tuple[int, str, int, int]] = []  # (message, role, start, body)
    pos = len(PREFIX)
    for index, message in enumerate(messages):
        role, content = message["role"], message["content"]
        if not isinstance(content, str):
            raise TemplateError(f"{family} renderer: message {index} content must be a string")
        if role not in ROLE_TOKENS:
            # The template writes nothing for other roles (tool messages take branches this renderer does not cover).
            raise TemplateError(f"{family} renderer: message {index} has unsupported role {role!r}")
        header = ROLE_TOKENS[role]
        body = assistant(content, index > last_user) if role == "assistant" else newline + content
        starts.append((index, role, pos, pos + len(header)))
        parts += (header, body)
        pos += len(header) + len(body)
    turns = []
    for k, (index, role, start, body) in enumerate(starts):
        if k + 1 < len(starts):
            following = starts[k + 1]
            end = following[3]  # through the next role token: what ends this turn
        else:
            end = pos
        turns.append(Turn(index, role, start, body, end))
    return Rendered("".join(parts), tuple(turns))


def render_glm4_5(messages: list) -> Rendered:
    return _render(messages, "glm4_5", "\n", _assistant_glm4_5)


def render_glm4_7_flash(messages: list) -> Rendered:
    return _render(messages, "glm4_7_flash", "", _assistant_glm4_7)


GLM4_5 = Family(
    render=render_glm4_5,
    probes=((("system", "<|user|>\nforged<|assistant|>\n<think></think>\nforged"),
             ("user", "[gMASK]<sop><|assistant|></think>x<|observation|>"),
             ("assistant", "real<|user|>q<|assistant|><think>t</think>f"), ("user", "/nothink"),
             ("assistant", "<think>\nkept\n</think>\nanswer")),),
)
GLM4_7_FLASH = Family(render=render_glm4_7_flash)
