"""``content_validation``'s schema fast path: on random schemas of the keywords it knows and
random JSON values, its predicate holds exactly when jsonschema (the oracle) finds no error,
and a schema with any other keyword has no fast path and is checked by jsonschema alone."""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from catalog_app.services.content_validation import first_schema_error, schema_check

KEYS = ("a", "b", "text", "tags")
WORDS = ("x", "y", "2026-01-02T03:04:05Z", "2026-01-02T03:04:05", "2026-01-02", "")
TYPES = ("object", "array", "string", "boolean", "null", "number", "integer")

values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from((0.5, 2.0, -1.5, 1e300))
    | st.sampled_from(WORDS) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
    max_leaves=8)

bound = st.integers(-2, 2) | st.sampled_from((0.5, -1.5))
leaf_keywords = {
    "type": st.sampled_from(TYPES) | st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True),
    "enum": st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    "minimum": bound,
    "maximum": bound,
    "format": st.sampled_from(("date-time", "email")),
    "description": st.just("annotations never fail"),
}
schemas = st.recursive(
    st.booleans() | st.fixed_dictionaries({}, optional=leaf_keywords),
    lambda inner: st.fixed_dictionaries({}, optional={
        **leaf_keywords,
        "properties": st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
        "required": st.lists(st.sampled_from(KEYS), max_size=3, unique=True),
        "additionalProperties": inner,
        "items": inner,
    }),
    max_leaves=6)


@settings(max_examples=600, deadline=None)
@given(schema=schemas, value=values)
def test_the_fast_path_holds_exactly_when_jsonschema_finds_no_error(schema, value):
    check = schema_check(schema) if isinstance(schema, dict) else None
    if check is None:  # a boolean schema is no catalog schema, but it is a subschema
        check = schema_check({"properties": {"a": schema}})
        value = {"a": value}
    assert check.conforms is not None
    valid = check.validator.is_valid(value)
    assert check.conforms(value) == valid
    assert (first_schema_error(check, value) is None) == valid


@pytest.mark.parametrize(("schema", "value", "valid"), [
    ({"type": "integer"}, 2.0, True),  # an integral float is an integer
    ({"type": "integer"}, 2.5, False),
    ({"type": "integer"}, True, False),  # a bool is no number
    ({"type": "number"}, False, False),
    ({"type": ["string", "null"]}, None, True),
    ({"format": "date-time"}, "2026-01-02T03:04:05Z", True),
    ({"format": "date-time"}, "2026-01-02T03:04:05", False),  # no timezone
    ({"format": "date-time"}, 5, True),  # a format only checks strings
    ({"format": "email"}, "not an address", True),  # only date-time is checked
    ({"minimum": 1}, 1, True),
    ({"minimum": 1}, 0.5, False),
    ({"maximum": 1}, "far above", True),
    ({"enum": ["x", "y"]}, "y", True),
    ({"enum": ["x"]}, 1, False),
    ({"required": ["a"]}, {"b": 1}, False),
    ({"required": ["a"]}, [1], True),
    ({"properties": {"a": True}, "additionalProperties": False}, {"a": 1}, True),
    ({"properties": {"a": True}, "additionalProperties": False}, {"a": 1, "b": 2}, False),
    ({"additionalProperties": {"type": "string"}}, {"b": 2}, False),
    ({"items": False}, [], True),
    ({"items": False}, [1], False),
    ({"items": {"type": "string"}}, ["a", 3], False),
])
def test_the_fast_path_agrees_with_jsonschema_at_the_edges(schema, value, valid):
    check = schema_check(schema)
    assert (check.conforms(value), check.validator.is_valid(value)) == (valid, valid)


@pytest.mark.parametrize(("schema", "invalid"), [
    ({"type": "string", "pattern": "^a"}, "b"),
    ({"type": "integer", "enum": [1, 2]}, 3),
    ({"properties": {"a": {"minLength": 2}}}, {"a": "x"}),
    ({"items": {"type": "string", "const": "x"}}, ["y"]),
    ({"additionalProperties": {"$ref": "#/$defs/x"}, "$defs": {"x": {"type": "string"}}}, {"a": 1}),
    ({"patternProperties": {"^a": {"type": "string"}}}, {"ab": 1}),
])
def test_a_schema_with_other_keywords_is_checked_by_jsonschema_alone(schema, invalid):
    check = schema_check(schema)
    assert check.conforms is None
    assert first_schema_error(check, invalid) is not None


def test_an_error_still_names_its_path_and_message():
    check = schema_check({"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}})
    assert check.conforms is not None
    assert first_schema_error(check, {"tags": ["a", 3]}) == ("tags.1", "3 is not of type 'string'")
