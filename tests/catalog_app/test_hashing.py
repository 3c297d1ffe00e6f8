"""Canonical JSON and definition hashes (pure; no database)."""
import hashlib
import json
import math

import pytest

from catalog_app.catalog.hashing import canonical_json, definition_hash, vector_text_and_hash


@pytest.mark.parametrize(("value", "expected"), [
    ({"b": 1, "a": [1, 2]}, '{"a":[1,2],"b":1}'),
    ({"z": {"y": 1, "x": 2}}, '{"z":{"x":2,"y":1}}'),
    ([3, 1, 2], "[3,1,2]"),  # lists keep their order
    ((1, 2), "[1,2]"),
    (1.0, "1"),
    (-0.0, "0"),
    (1e20, "100000000000000000000"),
    (1.5, "1.5"),
    (True, "true"),
    (None, "null"),
    ("é ✓", '"é ✓"'),  # not escaped
    ({"a": [{"b": 2.0, "a": None}]}, '{"a":[{"a":null,"b":2}]}'),
])
def test_canonical_json(value, expected):
    assert canonical_json(value) == expected


@pytest.mark.parametrize(("left", "right"), [
    ({"minimum": 1}, {"minimum": 1.0}),
    ({"scale": [0, 10]}, {"scale": [0.0, 10.0]}),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
    ([1, 2], (1, 2)),
    ({"n": 0}, {"n": -0.0}),
])
def test_semantically_equal_values_hash_the_same(left, right):
    assert definition_hash(left) == definition_hash(right)


@pytest.mark.parametrize(("left", "right"), [
    ({"v": 1}, {"v": 1.5}),
    ({"v": 1}, {"v": True}),
    ({"v": 0}, {"v": False}),
    ({"v": 0}, {"v": None}),
    ({"v": "1"}, {"v": 1}),
    ([1, 2], [2, 1]),
    ({"a": 1}, {"a": 1, "b": None}),
])
def test_different_values_hash_differently(left, right):
    assert definition_hash(left) != definition_hash(right)


def test_hash_is_sha256_of_the_canonical_json():
    value = {"name": "main", "version": 1, "schema": {"type": "object"}}
    digest = hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
    assert definition_hash(value) == digest
    assert len(digest) == 64 and digest == digest.lower()


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, {"a": [math.inf]}])
def test_non_finite_numbers_cannot_be_hashed(value):
    with pytest.raises(ValueError):
        definition_hash(value)


@pytest.mark.parametrize("value", [{1, 2}, b"bytes", object(), {"a": {"b": {1}}}])
def test_non_json_values_cannot_be_hashed(value):
    with pytest.raises(TypeError):
        definition_hash(value)


@pytest.mark.parametrize("vector", [
    [0.1, -0.25, 0.3333333333333333, 1e-07],
    [0.6, 0.0, -0.8],  # an integral component: canonical JSON writes it as 0
    [1.0, -0.0],
    [0.12345678901234568] * 384,
])
def test_a_vectors_text_is_its_compact_json_and_its_hash_the_definition_hash(vector):
    text, digest = vector_text_and_hash(vector)
    assert json.loads(text) == vector and " " not in text
    assert digest == definition_hash(vector)
