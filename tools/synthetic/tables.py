"""The lookup tables text is drawn from: 2**16 slots each, so that 16 random bits pick a word (or, in the pair
tables, two words) and a paragraph is one draw, one lookup and one join.

Built at import from the word lists and fixed seeds (integer arithmetic only: the same on every platform)."""

from __future__ import annotations

import random

from .lexicon import (
    ADJECTIVES,
    ADVERBS,
    FUNCTION_WORDS,
    IRREGULAR_VERBS,
    LANGUAGE_FORMAT,
    LANGUAGE_WORDS,
    NAMES,
    NOUNS,
    OCCUPATIONS,
    TECH_WORDS,
    VERBS,
    inflect_verb,
    number_tokens,
    plural,
)


def apportion(weights: list[int], slots: int) -> list[int]:
    """Integer slot counts proportional to integer ``weights`` (largest remainders, ties by index), each at least
    1. Integer arithmetic only: no float sum, whose rounding changed in Python 3.12."""
    total = sum(weights)
    counts = [max(1, w * slots // total) for w in weights]
    left = slots - sum(counts)
    order = sorted(range(len(weights)), key=lambda k: (-(weights[k] * slots % total), k))
    for k in order[:max(left, 0)]:
        counts[k] += 1
    return counts


def zipf_weights(n: int, offset: float) -> list[int]:
    """Integer Zipf weights ``1e12 / (rank + offset)`` (one IEEE division each: the same everywhere)."""
    return [int(1e12 / (r + offset)) for r in range(n)]


def capitalize(word: str) -> str:
    return word[0].upper() + word[1:]


TABLE_SIZE = 1 << 16  # texts are drawn 16 bits per word


def punctuated_table(plain: list[str], lang: str, sentence: int, comma_share: int, seed: str) -> tuple[str, ...]:
    """A 2**16-slot table: ``plain`` words plus punctuated entries, so that a paragraph is one lookup and one join.

    A sentence boundary is one entry, ``"word. Next"`` (end mark, separator, capitalized next word), drawn once
    every ``sentence`` words on average; ``"word,"`` entries make about one word in ``comma_share`` carry a comma.
    """
    sep, comma, ends, cap = LANGUAGE_FORMAT[lang]
    r = random.Random(seed)
    n_bound, n_comma = TABLE_SIZE // sentence, TABLE_SIZE // comma_share
    table = list(plain[: TABLE_SIZE - n_bound - n_comma])
    for _ in range(n_comma):
        table.append(plain[r.randrange(len(plain))] + comma)
    for _ in range(n_bound):
        nxt = plain[r.randrange(len(plain))]
        table.append(plain[r.randrange(len(plain))] + ends[r.randrange(len(ends))] + sep + (capitalize(nxt) if cap else nxt))
    r.shuffle(table)
    return tuple(table)


def english_table() -> tuple[tuple[str, ...], list[str]]:
    """Plain Zipf table of English word forms (and a few number tokens), plus the words by rank."""
    function = list(dict.fromkeys(FUNCTION_WORDS.split()))
    content: list[str] = []
    for noun in NOUNS.split():
        content += [noun, plural(noun) or noun]
    for verb in VERBS.split():
        content += inflect_verb(verb)
    for text in (IRREGULAR_VERBS, ADJECTIVES, ADVERBS, TECH_WORDS, NAMES):
        content += text.split()
    seen = set(function)
    unique = [w for w in dict.fromkeys(content) if w not in seen]
    random.Random("sftpack-vocabulary").shuffle(unique)
    ranked = function + unique
    number_slots = 1400
    counts = apportion(zipf_weights(len(ranked), 2.7), TABLE_SIZE - number_slots)
    numbers = number_tokens()
    table: list[str] = []
    for word, count in zip(ranked, counts):
        table += [word] * count
    for k in range(number_slots):
        table.append(numbers[k % len(numbers)])
    random.Random("sftpack-plain").shuffle(table)
    return tuple(table), ranked


def language_table(words: list[str]) -> tuple[str, ...]:
    """Plain Zipf table of another language's ``words`` (flatter than English's: offset 6)."""
    order = list(words)
    random.Random("sftpack-lang").shuffle(order)
    counts = apportion(zipf_weights(len(order), 6.0), TABLE_SIZE)
    table: list[str] = []
    for word, count in zip(order, counts):
        table += [word] * count
    random.Random("sftpack-lang-plain").shuffle(table)
    return tuple(table)


ENGLISH_WORDS, _ = english_table()
CAPITALIZED = {w: capitalize(w) for w in dict.fromkeys(ENGLISH_WORDS)}


def pair_table(table: tuple[str, ...], lang: str, distinct: int, seed: str) -> tuple[str, ...]:
    """2**16 slots holding ``distinct`` two-entry strings of ``table``: a paragraph is drawn two words per lookup
    (half the work); ``distinct`` pairs are enough that repeats stay as rare as in real text."""
    sep = LANGUAGE_FORMAT[lang][0]
    r = random.Random(seed)
    pairs = [table[r.getrandbits(16)] + sep + table[r.getrandbits(16)] for _ in range(distinct)]
    return tuple(pairs * (TABLE_SIZE // distinct))


def language_pair_table(lang: str) -> tuple[str, ...]:
    """The pair table of one of :data:`LANGUAGE_WORDS`' languages (sentences of 10 words, a comma in 9)."""
    words = punctuated_table(language_table(LANGUAGE_WORDS[lang].split()), lang, 10, 9, f"sftpack-{lang}")
    return pair_table(words, lang, 8192, f"sftpack-{lang}-pairs")


# English: sentences of 17 words on average, a comma after one word in 14, every slot a distinct pair
PAIR_TABLES = {"en": pair_table(punctuated_table(ENGLISH_WORDS, "en", 17, 14, "sftpack-en"), "en", TABLE_SIZE, "sftpack-en-pairs")}
PAIR_TABLES.update((lang, language_pair_table(lang)) for lang in LANGUAGE_WORDS)
SENTENCE_END = {lang: ends[0] + sep for lang, (sep, _, ends, _) in LANGUAGE_FORMAT.items()}
KEYWORDS = frozenset("""return break continue print import class try while for else case default type switch function
var let const new delete with yield lambda global pass raise from def del assert async await true false none null
self this super static public private protected int float str list dict set len range sum max min open input object
string package interface struct func mut use mod impl trait enum loop where select order group join limit having
count table values insert update match char long short double byte final export require catch throw finally""".split())
IDENT_WORDS = tuple(w for w in dict.fromkeys(NOUNS.split() + VERBS.split()) if 3 <= len(w) <= 9 and w not in KEYWORDS)
PEOPLE = tuple(NAMES.split()[:50])
OCCUPATION_LIST = tuple(o.strip().replace("\n", " ") for o in OCCUPATIONS.split(";") if o.strip())
