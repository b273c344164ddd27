"""One conversation: its source and language drawn, an optional system prompt, one to six turns, the rare long
conversation and the rarer oddity; and :func:`synthetic_conversations`."""

from __future__ import annotations

import random
from bisect import bisect
from typing import Iterator

from .draw import ConversationRng, below, between, pick, scaled
from .programs import any_program
from .prose import markdown, paragraph, paragraph_in, persona, phrase, snake_name, title_words
from .sources import LANGUAGE_MIX, SOURCE_CUMULATIVE, SOURCES
from .tables import PEOPLE


BASE36 = "0123456789abcdefghijklmnopqrstuvwxyz"  # the digits of a persona id
FIXED_SYSTEM_PROMPTS = (
    "You are a helpful assistant.",
    "You are a helpful, respectful and honest assistant.",
    "You are an AI assistant. User will give you a task. Your goal is to complete the task as faithfully as you "
    "can. While performing the task think step-by-step and justify your steps.",
    "You are an AI assistant that helps people find information.",
    "You are a helpful assistant, who always provide explanation. Think like you are answering to a five year old.",
    "You are a senior software engineer. Answer with concise, correct code and explain the key decisions.",
    "你是一个乐于助人的助手。请用中文回答。",
    "Ты — полезный ассистент. Отвечай на русском языке.",
)


def system_prompt(rng: random.Random, lang: str) -> str:
    """A fixed prompt (45%), a persona (35%) or a persona with rules (20%)."""
    r = rng.random()
    if r < 0.45:
        return pick(rng, FIXED_SYSTEM_PROMPTS)
    if r < 0.8:
        return f"You are {persona(rng, start=False)}. " + paragraph_in(rng, lang, scaled(rng, 35))
    rules = "\n".join(f"- {paragraph(rng, 6 + below(rng, 14))}" for _ in range(2 + below(rng, 6)))
    return f"You are {pick(rng, PEOPLE)}, {phrase(rng, 6)}.\n\n# Rules\n{rules}\n\n{paragraph(rng, scaled(rng, 40))}"


def follow_up(rng: random.Random, lang: str) -> str:
    """The user's message of a turn after the first: a short request, a traceback or a paragraph."""
    if lang != "en":
        return paragraph_in(rng, lang, scaled(rng, 20))
    r = rng.random()
    if r < 0.25:
        return pick(rng, ("Can you explain that in more detail?", "Thanks! Can you make it shorter?",
                           "What about the second part?", "Can you give me an example?", "Why?",
                           "Please continue.", "That doesn't work. Can you fix it?", "Translate that into Spanish."))
    if r < 0.4:
        return f"This gives an error:\n\n```\nTraceback (most recent call last):\n  File \"main.py\", line {between(rng, 3, 300)}, in <module>\n    {snake_name(rng, 2)}()\n{pick(rng, ('TypeError', 'ValueError', 'KeyError', 'IndexError'))}: {phrase(rng, 6)}\n```\n\n{paragraph(rng, 10)}"
    return paragraph(rng, scaled(rng, 40))


def add_oddity(rng: random.Random, messages: list[dict]) -> None:
    """One of the oddities real data has: an empty or blank answer, chat-template control text or a think block
    in a user message, or newlines around a message."""
    kind = below(rng, 6)
    last = messages[-1]
    users = [m for m in messages if m["role"] == "user"]
    if kind == 0:
        last["content"] = ""
    elif kind == 1:
        last["content"] = pick(rng, (" ", "\n", "  \n\n", "\t", "\n\n\n"))
    elif kind == 2:
        u = pick(rng, users)
        u["content"] += f"\n<|im_start|>assistant\n{paragraph(rng, 20)}<|im_end|>\n<|im_start|>user\n{paragraph(rng, 12)}"
    elif kind == 3:
        u = pick(rng, users)
        u["content"] = f"<think>\n{paragraph(rng, 30)}\n</think>\n\n" + u["content"]
    elif kind == 4:
        u = pick(rng, users)
        u["content"] = (f"Complete the conversation:\n<|im_start|>system\n{paragraph(rng, 10)}<|im_end|>\n<|im_start|>user\n"
                        f"{u['content']}<|im_end|>\n<|im_start|>assistant\n")
    else:
        m = pick(rng, messages)
        m["content"] = "\n" * (1 + below(rng, 3)) + m["content"] + "\n" * (1 + below(rng, 2))


def make_long(rng: random.Random, messages: list[dict]) -> None:
    """Stretch a conversation past 40,000 characters (mostly a long assistant answer)."""
    target = 41_000 + below(rng, 45_000)
    if rng.random() < 0.75:
        m = messages[-1]
        parts = [m["content"]]
        size = len(m["content"])
        code = rng.random() < 0.3
        while size < target:
            if code:
                lang, block = any_program(rng, 60)
                part = f"### {title_words(rng, 3)}\n\n{paragraph(rng, 40)}\n\n```{lang}\n{block}\n```"
            else:
                part = f"## {title_words(rng, 3 + below(rng, 4))}\n\n" + markdown(rng, 900)
            parts.append(part)
            size += len(part) + 2
        m["content"] = "\n\n".join(parts)
    else:
        u = next(m for m in messages if m["role"] == "user")
        doc = []
        size = 0
        while size < target:
            p = paragraph(rng, 150)
            doc.append(p)
            size += len(p) + 2
        u["content"] = "Here is the document:\n\n" + "\n\n".join(doc) + "\n\n" + u["content"]


def conversation(seed: int, i: int) -> dict:
    """Conversation ``i`` of ``seed``: a source by its weight, a language by the source's mix, then the turns."""
    rng = ConversationRng(f"sftpack-synthetic:{seed}:{i}")
    name, _, id_style, p_system, p_multi, gen, mix = SOURCES[bisect(SOURCE_CUMULATIVE, rng.random() * SOURCE_CUMULATIVE[-1])]
    lang = "en"
    if mix:
        langs, cum = LANGUAGE_MIX[mix]
        lang = langs[bisect(cum, rng.random() * cum[-1])]
    messages = []
    if rng.random() < p_system:
        messages.append({"role": "system", "content": system_prompt(rng, lang)})
    pairs = 2 + below(rng, 5) if rng.random() < p_multi else 1
    for turn in range(pairs):
        user, answer = gen(rng, lang, turn)  # generators skip building a first-turn prompt when turn > 0
        if turn:
            user = follow_up(rng, lang)
        messages.append({"role": "user", "content": user})
        messages.append({"role": "assistant", "content": answer})
    if rng.random() < 0.005:
        make_long(rng, messages)
    if rng.random() < 0.003:
        add_oddity(rng, messages)
    if id_style == "num":
        ident = f"{name}_{i}"
    elif id_style in ("oasst1", "hard_coded"):
        ident = f"{id_style}_{i}"
    else:
        ident = f"{id_style}_" + "".join(rng.choices(BASE36, k=24))
    return {"id": ident, "messages": messages, "source": name}


def synthetic_conversations(n: int, seed: int = 0) -> Iterator[dict]:
    """Yield ``n`` deterministic Tulu-3-shaped conversations; row ``i`` depends only on ``(seed, i)``."""
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n}")
    for i in range(n):
        yield conversation(seed, i)
