"""Prose in any of the languages: paragraphs, pieces cut at sentence ends, phrases, titles, identifiers,
structured markdown answers and personas."""

from __future__ import annotations

import random
from operator import itemgetter

from .draw import ConversationRng, below, between, pick, uint16s
from .lexicon import EMOJI, LANGUAGE_FORMAT
from .tables import CAPITALIZED, ENGLISH_WORDS, IDENT_WORDS, OCCUPATION_LIST, PAIR_TABLES, SENTENCE_END, capitalize


def paragraph_in(rng: random.Random, lang: str, nwords: int) -> str:
    """Text of about ``nwords`` words in ``lang``: sentences (capitalized where the script has case), commas."""
    sep, _, ends, cap = LANGUAGE_FORMAT[lang]
    text = sep.join(itemgetter(*uint16s(rng, max((nwords + 1) // 2, 2)))(PAIR_TABLES[lang]))
    if text[-1] not in ends:
        text = text.rstrip(",，、،") + ends[0]
    return capitalize(text) if cap else text


def split_paragraph(rng: random.Random, lang: str, nwords: int, k: int) -> list[str]:
    """About ``nwords`` words of text cut at sentence ends into (at most) ``k`` pieces of similar length."""
    text = paragraph_in(rng, lang, nwords)
    mark = SENTENCE_END[lang]
    step = len(text) // k
    out = []
    last = 0
    for j in range(1, k):
        p = text.find(mark, max(last, j * step))
        if p < 0:
            break
        p += len(mark)
        out.append(text[last:p].rstrip(" "))
        last = p
    if last < len(text):
        out.append(text[last:])
    return out


def paragraph(rng: random.Random, nwords: int) -> str:
    """About ``nwords`` words of English."""
    return paragraph_in(rng, "en", nwords)


def next_words(rng: ConversationRng, k: int) -> tuple[str, ...]:
    """The next ``k`` plain English words of ``rng``'s buffer, drawn 64 at a time."""
    p = rng.word_position
    if p + k > len(rng.word_buffer):
        rng.word_buffer = itemgetter(*uint16s(rng, 64))(ENGLISH_WORDS)
        p = 0
    rng.word_position = p + k
    return rng.word_buffer[p:p + k]


def phrase(rng: ConversationRng, k: int) -> str:
    """``k`` plain lowercase-ish words (no punctuation)."""
    return " ".join(next_words(rng, k))


def title_words(rng: ConversationRng, k: int) -> str:
    """``k`` capitalized words."""
    return " ".join(map(CAPITALIZED.__getitem__, next_words(rng, k)))


def snake_name(rng: random.Random, parts: int = 2) -> str:
    """An identifier such as ``budget_review``."""
    return "_".join(pick(rng, IDENT_WORDS) for _ in range(parts))


def camel_name(rng: random.Random, parts: int = 2) -> str:
    """An identifier such as ``BudgetReview``."""
    return "".join(pick(rng, IDENT_WORDS).capitalize() for _ in range(parts))


def markdown(rng: random.Random, nwords: int, lang: str = "en", emoji: float = 0.0) -> str:
    """A structured answer of about ``nwords`` words: paragraphs, headings, lists, bold, quotes."""
    sep = LANGUAGE_FORMAT[lang][0]
    pieces = split_paragraph(rng, lang, nwords, max(3, nwords // 18))
    blocks = [pieces[0]]
    i, n = 1, len(pieces)
    while i < n:
        x = rng.getrandbits(48)
        r = x & 1023
        take = 1 + (x >> 10) % 3
        if r < 460:
            blocks.append(sep.join(pieces[i:i + take]))
        elif r < 630:
            level = "##" if (x >> 12) & 1 else "###"
            head = title_words(rng, 2 + (x >> 13) % 4) if lang == "en" else paragraph_in(rng, lang, 4)[:-1]
            blocks.append(f"{level} {head}\n\n" + sep.join(pieces[i:i + take]))
        elif r < 900:
            take = 3 + (x >> 15) % 4
            numbered, bold = (x >> 18) & 1, lang == "en" and (x >> 19) % 5 < 3
            icons = emoji and rng.random() < emoji * 5  # a list with an emoji on each item
            lines = []
            for j, body in enumerate(pieces[i:i + take]):
                if bold:
                    body = f"**{title_words(rng, 1 + (x >> (20 + 2 * j)) % 3)}**: {body}"
                if icons:
                    body = EMOJI[(x >> (20 + 3 * j)) % len(EMOJI)] + " " + body
                lines.append(f"{j + 1}. {body}" if numbered else f"- {body}")
            blocks.append("\n".join(lines))
        elif r < 960:
            take = 1
            blocks.append("> " + pieces[i])
        else:
            take = 1
            blocks.append(pieces[i] + (" " + EMOJI[(x >> 20) % len(EMOJI)] if emoji else ""))
        i += take
    if emoji and rng.random() < emoji * 3:
        blocks[-1] += " " + "".join(pick(rng, EMOJI) for _ in range(1 + below(rng, 3)))
    return "\n\n".join(blocks)


def markdown_table(rng, rows, cols):
    """A markdown table of ``rows`` x ``cols`` cells and its header."""
    head = [title_words(rng, 1 + below(rng, 2)) for _ in range(cols)]
    lines = ["|" + "|".join(head) + "|", "|" + "|".join("---" for _ in head) + "|"]
    for _ in range(rows):
        cells = [str(between(rng, 0, 9999)) if rng.random() < 0.4 else phrase(rng, 1 + below(rng, 3)) for _ in head]
        lines.append("|" + "|".join(cells) + "|")
    return "\n".join(lines), head


def persona(rng: random.Random, start: bool = True) -> str:
    """``"A chef who ..."`` (``start``) or ``"a chef who ..."``."""
    occ = pick(rng, OCCUPATION_LIST)
    article = "an" if occ[0] in "aeiou" else "a"
    return f"{article.capitalize() if start else article} {occ} who {phrase(rng, 5 + below(rng, 8))}"
