import pytest

from catalog_app.text import TRUNCATION_SENTINEL, truncate_middle

S = TRUNCATION_SENTINEL
TEXT = "".join(chr(ord("a") + i % 26) for i in range(1000))


def test_sentinel_is_exact():
    assert S == "\n[...] truncated [...]\n"
    assert len(S) == 23


@pytest.mark.parametrize(("text", "limit", "expected"), [
    ("", 0, ""),
    ("short", 5, "short"),
    ("short", 500, "short"),
    # remaining 477: head = floor(477 / 2) = 238, tail = 239
    (TEXT, 500, TEXT[:238] + S + TEXT[-239:]),
    # remaining 1: head 0, tail 1
    (TEXT, 24, S + TEXT[-1:]),
    # remaining 2: head 1, tail 1
    (TEXT, 25, TEXT[:1] + S + TEXT[-1:]),
    # the limit equals the sentinel: nothing of the text is left
    (TEXT, 23, S),
    # smaller than the sentinel: a prefix of the sentinel
    (TEXT, 10, S[:10]),
    (TEXT, 0, ""),
    ("x" * 30, 29, "xxx" + S + "xxx"),
])
def test_truncate_middle_table(text, limit, expected):
    result = truncate_middle(text, limit)
    assert result == expected
    assert len(result) <= limit


def test_truncated_text_fills_the_limit_exactly():
    assert len(truncate_middle(TEXT, 500)) == 500


def test_negative_limit_is_rejected():
    with pytest.raises(ValueError, match="negative"):
        truncate_middle("text", -1)
