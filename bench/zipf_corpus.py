"""A synthetic corpus with a realistic vocabulary for the lexical benchmark (``bench lexical
--corpus zipf``), beside ``corpus.py``'s word-list records, whose few hundred distinct words make
nearly every query term common.

Terms. A vocabulary of ``VOCABULARY`` (200,000) pronounceable pseudo-words (consonant-vowel
syllables; the commonest ranks get the shortest words, as in natural language), drawn by a
Zipf-Mandelbrot law ``p(rank) ∝ 1 / (rank + 2.7)^1.0``, the usual fit of English word
frequencies. Texts also have topics: each entity owns ``TOPIC_WORDS`` words drawn from the
mid and rare ranks, and ``TOPIC_SHARE`` of an entity's tokens come from them, so a rare term
clusters in a few entities as names and subjects do in real memories.

Lengths. Three in four records are conversation turns, the rest abstracts; each length (in
``bm25_v1`` tokens) is drawn from the empirical distribution of the LoCoMo dev turns or of the
BEIR SciFact abstracts (title included): the 5%-quantiles of each, measured from
``/work/shared/bench`` and kept in ``TURN_QUANTILES`` / ``ABSTRACT_QUANTILES`` (``python
bench/zipf_corpus.py`` measures them again beside the constants). None of their text is used.

Queries. ``make_queries`` takes a record and draws 2-5 of its distinct terms: one or two of
its rarest (the terms a user would type to find it) and the rest uniformly from its tokens
(mostly common words, as in real queries, since ``bm25_v1`` keeps stopwords); the record's
entity is the query's entity.

Every function is deterministic by its ``seed``. The token ids of a corpus are cached in
``bench/.cache/`` (ignored by git; ``CACHE_VERSION`` is part of the name, so a change to the
generator never reads an older cache).
"""
from __future__ import annotations

import itertools
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / "bench" / ".cache"
CACHE_VERSION = 1
VOCABULARY = 200_000
ZIPF_EXPONENT, ZIPF_SHIFT = 1.0, 2.7
TURN_SHARE = 0.75
RECORDS_PER_ENTITY = 20
TOPIC_WORDS, TOPIC_SHARE, TOPIC_MIN_RANK = 30, 0.1, 1_000
SENTENCE_WORDS = 12  # a full stop and a capital every so many words: punctuation the tokenizer drops
# bm25_v1 token counts at the 0th, 5th, ..., 100th percentile.
TURN_QUANTILES = (1, 9, 12, 13, 15, 16, 18, 19, 21, 23, 25, 27, 29, 32, 34, 37, 40, 44, 49, 57, 83)
ABSTRACT_QUANTILES = (38, 110, 132, 146, 158, 166, 172, 179, 191, 203, 213, 222, 234, 247, 261, 273, 284, 302,
                      328, 377, 1575)
_CONSONANTS, _VOWELS = "bdfghklmnprstvz", "aeiou"
BASE_TIME = datetime(2025, 1, 1, tzinfo=UTC)


def vocabulary(seed: int = 0) -> np.ndarray:
    """``VOCABULARY`` distinct lowercase words, index = frequency rank (0 the commonest):
    every one-syllable word, then two-syllable ones, then three-, each length shuffled."""
    rng = random.Random(f"zipf-vocabulary-{seed}")
    syllables = [c + v for c in _CONSONANTS for v in _VOWELS]
    words: list[str] = []
    for count in itertools.count(1):
        tier = ["".join(parts) for parts in itertools.product(syllables, repeat=count)]
        rng.shuffle(tier)
        words += tier[:VOCABULARY - len(words)]
        if len(words) == VOCABULARY:
            return np.array(words, dtype=object)


def _lengths(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(token counts, is a turn)``: each length by inverse transform over its kind's quantiles."""
    turns = rng.random(n) < TURN_SHARE
    steps = np.linspace(0.0, 1.0, len(TURN_QUANTILES))
    u = rng.random(n)
    turn_lengths = np.interp(u, steps, TURN_QUANTILES)
    abstract_lengths = np.interp(u, steps, ABSTRACT_QUANTILES)
    return np.maximum(1, np.rint(np.where(turns, turn_lengths, abstract_lengths))).astype(np.int64), turns


def token_ids(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """``{ids, offsets, entities, turns}``: record ``i``'s token ranks are
    ``ids[offsets[i]:offsets[i + 1]]``, its entity number ``entities[i]``, whether it is a turn
    ``turns[i]``. Cached in ``CACHE`` by ``(n, seed, CACHE_VERSION)``."""
    path = CACHE / f"zipf-v{CACHE_VERSION}-{n}-{seed}.npz"
    if path.is_file():
        with np.load(path) as cached:
            return dict(cached)
    rng = np.random.default_rng([seed, n, CACHE_VERSION])
    weights = 1.0 / (np.arange(VOCABULARY) + 1 + ZIPF_SHIFT) ** ZIPF_EXPONENT
    cdf = np.cumsum(weights / weights.sum())
    lengths, turns = _lengths(rng, n)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    entity_count = max(1, -(-n // RECORDS_PER_ENTITY))
    entities = rng.integers(0, entity_count, n)
    ids = np.minimum(np.searchsorted(cdf, rng.random(int(offsets[-1]))), VOCABULARY - 1)
    topics = rng.integers(TOPIC_MIN_RANK, VOCABULARY, (entity_count, TOPIC_WORDS))
    topical = np.flatnonzero(rng.random(ids.size) < TOPIC_SHARE)
    owner = entities[np.searchsorted(offsets, topical, side="right") - 1]
    ids[topical] = topics[owner, rng.integers(0, TOPIC_WORDS, topical.size)]
    CACHE.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".tmp.npz")
    arrays = {"ids": ids.astype(np.int32), "offsets": offsets, "entities": entities, "turns": turns}
    np.savez(partial, **arrays)
    partial.replace(path)
    return arrays


def _text(words: list[str]) -> str:
    sentences = [" ".join(words[start:start + SENTENCE_WORDS]) for start in range(0, len(words), SENTENCE_WORDS)]
    return " ".join(sentence[:1].upper() + sentence[1:] + "." for sentence in sentences)


def make_records(n: int, seed: int = 0, *, collection: str = "main") -> list[dict]:
    """``n`` ``POST /records`` items for ``collection`` (events: a turn is a ``chat``, an
    abstract a ``note``; no keyed facts, so every record is visible), ``occurred_at``
    increasing through 2025 in item order."""
    arrays = token_ids(n, seed)
    offsets, entities, turns = arrays["offsets"], arrays["entities"], arrays["turns"]
    words = vocabulary(seed)[arrays["ids"]].tolist()
    span = timedelta(days=364).total_seconds()
    items = []
    for index in range(n):
        start, end = int(offsets[index]), int(offsets[index + 1])
        occurred = BASE_TIME + timedelta(seconds=int(span * index / max(n, 1)))
        items.append({"entity": f"person.zipf-{int(entities[index])}", "collection": collection,
                      "type": "chat" if turns[index] else "note",
                      "text": _text(words[start:end]), "occurred_at": occurred.isoformat().replace("+00:00", "Z")})
    return items


def make_queries(records: list[dict], n: int, seed: int = 0) -> list[dict]:
    """``n`` queries ``{"q", "entity", "source_index"}`` drawn from ``records`` (module docstring)."""
    from catalog_app.bm25_terms import bm25_tokens

    rank = {word: number for number, word in enumerate(vocabulary(seed).tolist())}
    rng = random.Random(f"zipf-queries-{seed}")
    queries = []
    while len(queries) < n:
        index = rng.randrange(len(records))
        tokens = bm25_tokens(records[index]["text"])
        distinct = sorted(set(tokens), key=lambda word: (-rank[word], word))
        if len(distinct) < 2:
            continue
        size = min(len(distinct), rng.randint(2, 5))
        chosen = distinct[:rng.randint(1, 2)]
        while len(chosen) < size:
            word = rng.choice(tokens)
            if word not in chosen:
                chosen.append(word)
        rng.shuffle(chosen)
        queries.append({"q": " ".join(chosen), "entity": records[index]["entity"], "source_index": index})
    return queries


def measured_quantiles(shared: Path = Path("/work/shared/bench")) -> dict[str, list[int]]:
    """The 5%-quantiles of ``bm25_v1`` token counts of the LoCoMo dev turns and the SciFact
    abstracts, as the constants were taken."""
    sys.path.insert(0, str(ROOT))
    from bench.locomo import load_data as locomo_data
    from bench.scifact import load_data as scifact_data
    from bench.scifact import record_items
    from catalog_app.bm25_terms import bm25_tokens

    steps = np.linspace(0, 100, len(TURN_QUANTILES))
    turns = [len(bm25_tokens(t["item"]["text"])) for t in locomo_data(shared / "locomo" / "locomo-dev.json",
                                                                       None, "plain")["turns"]]
    abstracts = [len(bm25_tokens(item["text"])) for item in
                 record_items(scifact_data(shared / "beir-scifact", "train", None, None)["corpus"])]
    return {name: np.rint(np.percentile(values, steps)).astype(int).tolist()
            for name, values in (("turns", turns), ("abstracts", abstracts))}


if __name__ == "__main__":  # python bench/zipf_corpus.py: a sample, its statistics, the quantiles
    from collections import Counter

    sys.path.insert(0, str(ROOT))
    from catalog_app.bm25_terms import bm25_tokens

    sample = make_records(20_000, seed=1)
    counts = Counter(token for item in sample for token in bm25_tokens(item["text"]))
    lengths = [len(bm25_tokens(item["text"])) for item in sample]
    print(sample[0]["text"][:300])
    print(f"records {len(sample):,}  tokens {sum(lengths):,}  distinct terms {len(counts):,}  "
          f"median length {int(np.median(lengths))}  mean {np.mean(lengths):.1f}")
    print("commonest:", counts.most_common(8))
    print("queries:", [query["q"] for query in make_queries(sample, 6, seed=1)])
    print("constants:", {"turns": list(TURN_QUANTILES), "abstracts": list(ABSTRACT_QUANTILES)})
    print("measured: ", measured_quantiles())
