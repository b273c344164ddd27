"""Test conversations: message builders (``u("Q?")``, ``a("A.", step_loss_mask=0)``, ``s("Be brief.")``), seeded
random conversations, and the decoded supervised runs of an encoding."""

import random

import numpy as np


def u(content, **extra) -> dict:
    return {"role": "user", "content": content, **extra}


def a(content, **extra) -> dict:
    return {"role": "assistant", "content": content, **extra}


def s(content) -> dict:
    return {"role": "system", "content": content}


def supervised_runs(decode, ids, mask) -> list[str]:
    """The decoded text of each maximal run of supervised tokens."""
    runs, current = [], []
    for token, flag in zip(np.asarray(ids).tolist(), np.asarray(mask).tolist()):
        if flag:
            current.append(token)
        elif current:
            runs.append(decode(current))
            current = []
    if current:
        runs.append(decode(current))
    return runs


def encoded_runs(encoder, messages) -> list[str]:
    """:func:`supervised_runs` of ``encoder(messages)``, decoded with the encoder's own vocabulary."""
    return supervised_runs(encoder.vocab.decode, *encoder(messages))


def random_conversations(n: int, *, seed: int, words: list[str], p_system: float = 0.3,
                         p_last_user: float | None = None) -> list:
    """``n`` seeded conversations of ``words``: an optional system message, 1-4 user/assistant pairs (a fifth of
    the answers with ``step_loss_mask: 0``), and with ``p_last_user`` sometimes a trailing user message."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        messages = []
        if rng.random() < p_system:
            messages.append(s(" ".join(rng.choices(words, k=rng.randint(0, 12)))))
        for _ in range(rng.randint(1, 4)):
            messages.append(u(" ".join(rng.choices(words, k=rng.randint(1, 30)))))
            messages.append(a("".join(rng.choices(words, k=rng.randint(0, 60)))))
            if rng.random() < 0.2:
                messages[-1]["step_loss_mask"] = 0
        if p_last_user is not None and rng.random() < p_last_user:
            messages.append(u("a last user message"))
        out.append(messages)
    return out
