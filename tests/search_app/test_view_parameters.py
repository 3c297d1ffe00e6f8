"""The shared parameter model: load-time declarations, the JSON Schema it publishes, call-time
binding (which must agree with that schema), and the fixed graph-view contracts."""
import re
from datetime import date

import jsonschema
import pytest
import yaml

from catalog_app.catalog.errors import CatalogError
from memseek_site.errors import ApiError
from search_app.views.parameters import (
    GRAPH_PARAMETERS,
    ORPHAN_PARAMETERS,
    RFC3339_PATTERN,
    Parameter,
    bind_parameters,
    check_fixed_contract,
    input_schema,
    parameters_summary,
    parse_parameters,
)

SPEC_EXAMPLE = yaml.safe_load("""
entity:
  type: string
  required: true
  description: The contact this search is about.
  min_length: 3
  max_length: 128
horizon:
  type: string
  default: week
  description: How far ahead to look.
  enum: [day, week, quarter]
channels:
  type: string_array
  default: []
  item_enum: [email, call, note]
  max_items: 3
k:
  type: integer
  default: 20
  minimum: 1
  maximum: 100
""")

GRAPH_DECLARED = yaml.safe_load("""
seed: {type: string, required: true}
predicates: {type: string_array, default: []}
direction: {type: string, default: out}
depth: {type: integer, default: 1}
limit: {type: integer, default: 20}
""")


def spec_parameters():
    return parse_parameters(SPEC_EXAMPLE, "views[0].parameters")


def all_types():
    """The spec example plus one optional parameter of each remaining type."""
    extra = {
        "when": {"type": "datetime"},
        "ratio": {"type": "number", "minimum": 0, "maximum": 1},
        "flag": {"type": "boolean"},
    }
    return parse_parameters({**SPEC_EXAMPLE, **extra}, "parameters")


# ---------------------------------------------------------------- load time

INVALID_DECLARATIONS = [
    ("not a mapping", [], "parameters"),
    ("upper-case name", {"Entity": {"type": "string"}}, "parameters.Entity"),
    ("name starts with a digit", {"1k": {"type": "integer"}}, "parameters.1k"),
    ("name too long", {"a" * 65: {"type": "string"}}, "parameters." + "a" * 65),
    ("declaration not a mapping", {"x": "string"}, "parameters.x"),
    ("unknown key", {"x": {"type": "string", "pattern": "a+"}}, "parameters.x.pattern"),
    ("missing type", {"x": {"required": True}}, "parameters.x.type"),
    ("unknown type", {"x": {"type": "text"}}, "parameters.x.type"),
    ("minimum on a string", {"x": {"type": "string", "minimum": 1}}, "parameters.x.minimum"),
    ("maximum on a boolean", {"x": {"type": "boolean", "maximum": 1}}, "parameters.x.maximum"),
    ("item_enum on a string", {"x": {"type": "string", "item_enum": ["a"]}}, "parameters.x.item_enum"),
    ("min_length on an integer", {"x": {"type": "integer", "min_length": 1}}, "parameters.x.min_length"),
    ("max_length on a string_array", {"x": {"type": "string_array", "max_length": 1}}, "parameters.x.max_length"),
    ("max_items on a string", {"x": {"type": "string", "max_items": 3}}, "parameters.x.max_items"),
    ("min_items on a datetime", {"x": {"type": "datetime", "min_items": 1}}, "parameters.x.min_items"),
    ("required not a boolean", {"x": {"type": "string", "required": "yes"}}, "parameters.x.required"),
    ("required with a default", {"x": {"type": "string", "required": True, "default": "a"}}, "parameters.x.default"),
    ("blank description", {"x": {"type": "string", "description": "  "}}, "parameters.x.description"),
    ("description not a string", {"x": {"type": "string", "description": 5}}, "parameters.x.description"),
    ("fractional integer bound", {"x": {"type": "integer", "minimum": 1.5}}, "parameters.x.minimum"),
    ("string bound", {"x": {"type": "number", "maximum": "10"}}, "parameters.x.maximum"),
    ("boolean bound", {"x": {"type": "number", "minimum": True}}, "parameters.x.minimum"),
    ("minimum above maximum", {"x": {"type": "number", "minimum": 5, "maximum": 1}}, "parameters.x.minimum"),
    ("min_length above max_length", {"x": {"type": "string", "min_length": 5, "max_length": 4}},
     "parameters.x.min_length"),
    ("min_items above max_items", {"x": {"type": "string_array", "min_items": 2, "max_items": 1}},
     "parameters.x.min_items"),
    ("negative length", {"x": {"type": "string", "min_length": -1}}, "parameters.x.min_length"),
    ("fractional length", {"x": {"type": "string", "max_length": 1.5}}, "parameters.x.max_length"),
    ("empty enum", {"x": {"type": "string", "enum": []}}, "parameters.x.enum"),
    ("enum not a list", {"x": {"type": "string", "enum": "day"}}, "parameters.x.enum"),
    ("repeated enum entry", {"x": {"type": "string", "enum": ["a", "b", "a"]}}, "parameters.x.enum[2]"),
    ("repeated numeric enum entry", {"x": {"type": "number", "enum": [1, 1.0]}}, "parameters.x.enum[1]"),
    ("enum entry of the wrong type", {"x": {"type": "integer", "enum": ["1"]}}, "parameters.x.enum[0]"),
    ("fractional integer enum entry", {"x": {"type": "integer", "enum": [1, 1.5]}}, "parameters.x.enum[1]"),
    ("null enum entry", {"x": {"type": "string", "enum": [None]}}, "parameters.x.enum[0]"),
    ("enum entry too long", {"x": {"type": "string", "max_length": 3, "enum": ["day", "week"]}},
     "parameters.x.enum[1]"),
    ("enum entry out of range", {"x": {"type": "integer", "maximum": 10, "enum": [5, 11]}}, "parameters.x.enum[1]"),
    ("enum list item outside item_enum", {"x": {"type": "string_array", "item_enum": ["a"], "enum": [["a", "b"]]}},
     "parameters.x.enum[0][1]"),
    ("datetime enum entry without timezone", {"x": {"type": "datetime", "enum": ["2026-01-01T00:00:00"]}},
     "parameters.x.enum[0]"),
    ("empty item_enum", {"x": {"type": "string_array", "item_enum": []}}, "parameters.x.item_enum"),
    ("non-string item_enum entry", {"x": {"type": "string_array", "item_enum": [1]}}, "parameters.x.item_enum[0]"),
    ("repeated item_enum entry", {"x": {"type": "string_array", "item_enum": ["a", "a"]}},
     "parameters.x.item_enum[1]"),
    ("default of the wrong type", {"x": {"type": "integer", "default": "20"}}, "parameters.x.default"),
    ("boolean default for an integer", {"x": {"type": "integer", "default": True}}, "parameters.x.default"),
    ("default below minimum", {"x": {"type": "integer", "minimum": 1, "default": 0}}, "parameters.x.default"),
    ("default not in enum", {"x": {"type": "string", "enum": ["day"], "default": "week"}}, "parameters.x.default"),
    ("default too short", {"x": {"type": "string", "min_length": 3, "default": "ab"}}, "parameters.x.default"),
    ("default with too many items", {"x": {"type": "string_array", "max_items": 1, "default": ["a", "b"]}},
     "parameters.x.default"),
    ("default item outside item_enum", {"x": {"type": "string_array", "item_enum": ["a"], "default": ["b"]}},
     "parameters.x.default[0]"),
    ("default item not a string", {"x": {"type": "string_array", "default": [1]}}, "parameters.x.default[0]"),
    ("datetime default without timezone", {"x": {"type": "datetime", "default": "2026-01-01T00:00:00"}},
     "parameters.x.default"),
    ("null default", {"x": {"type": "string", "default": None}}, "parameters.x.default"),
]


@pytest.mark.parametrize(("case", "raw", "path"), INVALID_DECLARATIONS, ids=[row[0] for row in INVALID_DECLARATIONS])
def test_invalid_declaration_fails_at_load_with_its_path(case, raw, path):
    with pytest.raises(CatalogError) as caught:
        parse_parameters(raw, "parameters")
    assert (caught.value.path, caught.value.code) == (path, "view_parameter")


def test_spec_example_parses_in_declaration_order():
    parameters = spec_parameters()
    assert [param.name for param in parameters] == ["entity", "horizon", "channels", "k"]
    assert parameters[0] == Parameter("entity", "string", required=True,
                                      description="The contact this search is about.", min_length=3, max_length=128)
    assert parameters[2].default == () and parameters[2].item_enum == ("email", "call", "note")


def test_no_parameters_is_an_empty_tuple():
    assert parse_parameters({}, "parameters") == ()


def test_whole_float_integer_bounds_and_defaults_become_integers():
    (param,) = parse_parameters({"k": {"type": "integer", "minimum": 1.0, "maximum": 100, "default": 20.0}}, "p")
    assert (param.minimum, param.default) == (1, 20)
    assert type(param.minimum) is int and type(param.default) is int


def test_optional_parameter_may_declare_required_false_with_a_default():
    (param,) = parse_parameters({"x": {"type": "boolean", "required": False, "default": False}}, "p")
    assert param.default is False and not param.required


# ---------------------------------------------------------------- input_schema and summary


def test_input_schema_of_the_spec_example():
    assert input_schema(spec_parameters()) == {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "entity": {"type": "string", "minLength": 3, "maxLength": 128,
                       "description": "The contact this search is about."},
            "horizon": {"type": "string", "enum": ["day", "week", "quarter"],
                        "description": "How far ahead to look.", "default": "week"},
            "channels": {"type": "array", "items": {"type": "string", "enum": ["email", "call", "note"]},
                         "maxItems": 3, "default": []},
            "k": {"type": "integer", "minimum": 1, "maximum": 100, "default": 20},
        },
        "additionalProperties": False,
        "required": ["entity"],
    }


def test_input_schema_of_every_type_and_the_remaining_keywords():
    parameters = parse_parameters(yaml.safe_load("""
        when: {type: datetime, enum: ["2026-01-01T00:00:00Z"]}
        ratio: {type: number, minimum: 0.5}
        flag: {type: boolean, default: true}
        tags: {type: string_array, min_items: 1, enum: [[a], [a, b]]}
    """), "p")
    schema = input_schema(parameters)
    assert schema["properties"] == {
        "when": {"type": "string", "format": "date-time", "pattern": RFC3339_PATTERN,
                 "enum": ["2026-01-01T00:00:00Z"]},
        "ratio": {"type": "number", "minimum": 0.5},
        "flag": {"type": "boolean", "default": True},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1, "enum": [["a"], ["a", "b"]]},
    }
    assert schema["required"] == []  # always present, possibly empty
    jsonschema.Draft202012Validator.check_schema(schema)


def test_parameters_summary_is_the_compact_get_views_form():
    assert parameters_summary(spec_parameters()) == {
        "entity": {"type": "string", "required": True, "default": None},
        "horizon": {"type": "string", "required": False, "default": "week"},
        "channels": {"type": "string_array", "required": False, "default": []},
        "k": {"type": "integer", "required": False, "default": 20},
    }


# ---------------------------------------------------------------- call time

INVALID_CALLS = [
    ("unknown parameter", {"entity": "abc", "foo": 1}, "foo"),
    ("missing required", {"horizon": "day"}, "entity"),
    ("string given a number", {"entity": 5}, "entity"),
    ("string too short", {"entity": "ab"}, "entity"),
    ("string too long", {"entity": "a" * 129}, "entity"),
    ("null for an optional parameter", {"entity": "abc", "horizon": None}, "horizon"),
    ("enum miss", {"entity": "abc", "horizon": "year"}, "horizon"),
    ("string_array given a string", {"entity": "abc", "channels": "email"}, "channels"),
    ("string_array item not a string", {"entity": "abc", "channels": ["email", 2]}, "channels[1]"),
    ("item_enum miss", {"entity": "abc", "channels": ["email", "fax"]}, "channels[1]"),
    ("too many items", {"entity": "abc", "channels": ["email", "call", "note", "email"]}, "channels"),
    ("integer given a string", {"entity": "abc", "k": "20"}, "k"),
    ("boolean as integer", {"entity": "abc", "k": True}, "k"),
    ("fractional integer", {"entity": "abc", "k": 1.5}, "k"),
    ("below minimum", {"entity": "abc", "k": 0}, "k"),
    ("above maximum", {"entity": "abc", "k": 101}, "k"),
    ("number given a string", {"entity": "abc", "ratio": "0.5"}, "ratio"),
    ("boolean as number", {"entity": "abc", "ratio": False}, "ratio"),
    ("number above maximum", {"entity": "abc", "ratio": 1.5}, "ratio"),
    ("non-finite number", {"entity": "abc", "ratio": float("nan")}, "ratio"),
    ("boolean given a string", {"entity": "abc", "flag": "true"}, "flag"),
    ("boolean given a number", {"entity": "abc", "flag": 1}, "flag"),
    ("datetime given a number", {"entity": "abc", "when": 1767225600}, "when"),
    ("datetime without timezone", {"entity": "abc", "when": "2026-07-17T09:00:00"}, "when"),
    ("date without time", {"entity": "abc", "when": "2026-07-17"}, "when"),
    ("datetime that is not a date", {"entity": "abc", "when": "next tuesday"}, "when"),
    ("impossible calendar date", {"entity": "abc", "when": "2026-02-30T00:00:00Z"}, "when"),
]


@pytest.mark.parametrize(("case", "values", "path"), INVALID_CALLS, ids=[row[0] for row in INVALID_CALLS])
def test_invalid_call_is_a_view_parameter_error_at_its_path(case, values, path):
    with pytest.raises(ApiError) as caught:
        bind_parameters(all_types(), values)
    assert (caught.value.code, caught.value.path, caught.value.status) == ("view_parameter", path, 422)
    assert caught.value.detail.startswith(f"{path}: ")


@pytest.mark.parametrize("values", [[], "entity=abc", None])
def test_parameters_must_be_a_json_object(values):
    with pytest.raises(ApiError) as caught:
        bind_parameters(all_types(), values)
    assert (caught.value.code, caught.value.path) == ("view_parameter", None)


def test_error_paths_sit_under_the_given_prefix():
    with pytest.raises(ApiError) as caught:
        bind_parameters(all_types(), {"entity": "abc", "channels": ["fax"]}, path="parameters")
    assert caught.value.path == "parameters.channels[0]"


def test_defaults_are_applied_and_omitted_optionals_stay_absent():
    bound = bind_parameters(all_types(), {"entity": "people/maya"})
    assert bound == {"entity": "people/maya", "horizon": "week", "channels": [], "k": 20}


def test_supplied_values_win_and_come_back_as_json_values():
    bound = bind_parameters(all_types(), {
        "k": 7.0, "channels": ["call"], "entity": "abc", "when": "2026-07-17T09:00:00+02:00", "flag": True,
        "ratio": 1,
    })
    assert bound == {"entity": "abc", "horizon": "week", "channels": ["call"], "k": 7,
                     "when": "2026-07-17T09:00:00+02:00", "ratio": 1, "flag": True}
    assert type(bound["k"]) is int


def test_a_bound_default_list_is_a_fresh_list():
    first = bind_parameters(all_types(), {"entity": "abc"})
    first["channels"].append("email")
    assert bind_parameters(all_types(), {"entity": "abc"})["channels"] == []


# Values chosen where JSON Schema's rules (and its date-time format) are easy to get subtly
# wrong: the binder must accept exactly what the published schema accepts.
AGREEMENT_SAMPLES = [
    ("when", "2026-07-17T09:00:00Z"), ("when", "2026-07-17t09:00:00z"), ("when", "2026-07-17T09:00:00.123456789+05:30"),
    ("when", "2026-07-17T09:00:00-00:00"), ("when", "2024-02-29T00:00:00Z"),
    ("when", "2026-07-17T09:00:00"), ("when", "2026-07-17 09:00:00Z"), ("when", "2026-07-17T09:00Z"),
    ("when", "2026-07-17"), ("when", "20260717T090000Z"), ("when", "2026-07-17T09:00:00+0530"),
    ("when", "2026-02-30T00:00:00Z"), ("when", "2026-07-17T24:00:00Z"), ("when", "2026-07-17T09:00:60Z"),
    ("when", "2026-07-17T09:00:00+24:00"), ("when", "0000-01-01T00:00:00Z"), ("when", ""), ("when", 5),
    ("k", 20), ("k", 20.0), ("k", 1.5), ("k", True), ("k", 0), ("k", 100), ("k", 101), ("k", None), ("k", "1"),
    ("ratio", 0), ("ratio", 0.5), ("ratio", 1), ("ratio", 1.0001), ("ratio", False),
    ("entity", "abc"), ("entity", "ab"), ("entity", "a" * 128), ("entity", "🦉🦉🦉"), ("entity", ""),
    ("horizon", "week"), ("horizon", "Week"), ("horizon", ["week"]),
    ("channels", []), ("channels", ["email", "email"]), ("channels", ["fax"]), ("channels", ["a"] * 4),
    ("channels", ["email", "call", "note"]), ("channels", [None]), ("channels", {"email": 1}),
    ("flag", True), ("flag", 0), ("flag", "false"),
]


@pytest.mark.parametrize(("name", "value"), AGREEMENT_SAMPLES)
def test_binding_agrees_with_the_published_schema(name, value):
    parameters = all_types()
    validator = jsonschema.Draft202012Validator(input_schema(parameters), format_checker=jsonschema.FormatChecker())
    values = {"entity": "abc", name: value}
    try:
        bind_parameters(parameters, values)
        bound = True
    except ApiError:
        bound = False
    assert bound == validator.is_valid(values)

RFC3339 = re.compile(RFC3339_PATTERN)


def test_the_published_datetime_pattern_is_enforced_without_format_packages():
    """A validator with no format checker at all (a client without the optional packages) still
    refuses what the binder refuses."""
    parameters = all_types()
    validator = jsonschema.Draft202012Validator(input_schema(parameters))
    for value in ("yesterday", "2026-02-30T00:00:00Z", "2026-07-17T09:00:00", "2026-07-17T09:00:00Z\n",
                  "\u0662\u0660\u0662\u0666-07-17T09:00:00Z"):
        assert not validator.is_valid({"entity": "abc", "when": value}), value
    assert validator.is_valid({"entity": "abc", "when": "2026-07-17T09:00:00Z"})


def test_the_datetime_pattern_knows_every_calendar_day_of_a_400_year_cycle():
    """The day part of the pattern against the calendar itself: every (year, month, day) from the
    1st to the 31st of every month of 1600-1999 and of the years 0001-0004 and 9996-9999."""
    years = [*range(1, 5), *range(1600, 2000), *range(9996, 10000)]
    for year in years:
        for month in range(1, 13):
            for day in range(1, 32):
                text = f"{year:04d}-{month:02d}-{day:02d}T00:00:00Z"
                try:
                    date(year, month, day)
                    real = True
                except ValueError:
                    real = False
                assert bool(RFC3339.fullmatch(text)) == real, text
    assert not RFC3339.fullmatch("0000-02-29T00:00:00Z")


def test_schema_and_binder_agree_on_unknown_and_missing_keys():
    parameters = spec_parameters()
    validator = jsonschema.Draft202012Validator(input_schema(parameters))
    for values in ({}, {"entity": "abc", "other": 1}, {"entity": "abc"}):
        try:
            bind_parameters(parameters, values)
            bound = True
        except ApiError:
            bound = False
        assert bound == validator.is_valid(values)


# ---------------------------------------------------------------- fixed contracts


def test_spec_graph_view_parameters_pass_and_gain_the_fixed_limits():
    effective = check_fixed_contract(parse_parameters(GRAPH_DECLARED, "p"), GRAPH_PARAMETERS, "p")
    assert effective == GRAPH_PARAMETERS
    assert input_schema(effective)["properties"]["depth"] == {"type": "integer", "minimum": 1, "maximum": 16,
                                                              "default": 1}
    assert bind_parameters(effective, {"seed": "people/maya", "predicates": ["advises"], "depth": 2}) == {
        "seed": "people/maya", "predicates": ["advises"], "direction": "out", "depth": 2, "limit": 20}


def test_authors_may_describe_and_narrow_a_fixed_contract():
    declared = yaml.safe_load("""
        seed: {type: string, required: true, description: Where the walk starts.}
        predicates: {type: string_array, default: [], item_enum: [advises, depends_on], max_items: 2}
        direction: {type: string, default: out, enum: [out, both]}
        depth: {type: integer, default: 1, maximum: 3}
        limit: {type: integer, default: 20, minimum: 5, maximum: 50}
    """)
    effective = {p.name: p for p in check_fixed_contract(parse_parameters(declared, "p"), GRAPH_PARAMETERS, "p")}
    assert effective["seed"].description == "Where the walk starts." and effective["seed"].max_length == 128
    assert effective["predicates"].item_enum == ("advises", "depends_on") and effective["predicates"].max_items == 2
    assert effective["direction"].enum == ("out", "both")
    assert (effective["depth"].minimum, effective["depth"].maximum) == (1, 3)
    assert (effective["limit"].minimum, effective["limit"].maximum) == (5, 50)


@pytest.mark.parametrize(("bounds", "expected"), [
    ({"min_length": 1, "max_length": 128}, (1, 128)),
    ({"min_length": 3}, (3, 128)),
    ({"max_length": 64}, (1, 64)),
], ids=["the fixed bounds", "a longer minimum", "a shorter maximum"])
def test_authors_may_narrow_the_seed_length_within_the_fixed_range(bounds, expected):
    declared = _graph(seed={"type": "string", "required": True, **bounds})
    effective = {p.name: p for p in check_fixed_contract(parse_parameters(declared, "p"), GRAPH_PARAMETERS, "p")}
    assert (effective["seed"].min_length, effective["seed"].max_length) == expected
    schema = input_schema(tuple(effective.values()))["properties"]["seed"]
    assert (schema["minLength"], schema["maxLength"]) == expected
    with pytest.raises(ApiError) as caught:
        bind_parameters(tuple(effective.values()), {"seed": "x" * (expected[1] + 1)})
    assert caught.value.path == "seed"


def _graph(**changes):
    declared = {name: dict(spec) for name, spec in GRAPH_DECLARED.items()}
    for name, spec in changes.items():
        if spec is None:
            del declared[name]
        else:
            declared[name] = spec
    return declared


INVALID_CONTRACTS = [
    ("missing parameter", _graph(depth=None), "p.depth"),
    ("extra parameter", _graph(q={"type": "string"}), "p.q"),
    ("seed made optional", _graph(seed={"type": "string"}), "p.seed.required"),
    ("depth as a number", _graph(depth={"type": "number", "default": 1}), "p.depth.type"),
    ("limit default changed", _graph(limit={"type": "integer", "default": 10}), "p.limit.default"),
    ("direction default dropped", _graph(direction={"type": "string"}), "p.direction.default"),
    ("predicates given a default", _graph(predicates={"type": "string_array", "default": ["advises"]}),
     "p.predicates.default"),
    ("min_items on predicates", _graph(predicates={"type": "string_array", "default": [], "min_items": 0}),
     "p.predicates.min_items"),
    ("seed min_length below the fixed range", _graph(seed={"type": "string", "required": True, "min_length": 0}),
     "p.seed.min_length"),
    ("seed max_length above the fixed range", _graph(seed={"type": "string", "required": True, "max_length": 129}),
     "p.seed.max_length"),
    ("seed min_length above the fixed max_length",
     _graph(seed={"type": "string", "required": True, "min_length": 200}), "p.seed.min_length"),
    ("depth above the fixed range", _graph(depth={"type": "integer", "default": 1, "maximum": 20}),
     "p.depth.maximum"),
    ("limit below the fixed range", _graph(limit={"type": "integer", "default": 20, "minimum": 0}),
     "p.limit.minimum"),
    ("depth enum outside the fixed range", _graph(depth={"type": "integer", "default": 1, "enum": [1, 17]}),
     "p.depth.enum[1]"),
    ("direction outside out|in|both", _graph(direction={"type": "string", "default": "out",
                                                         "enum": ["out", "sideways"]}), "p.direction.enum[1]"),
]


@pytest.mark.parametrize(("case", "declared", "path"), INVALID_CONTRACTS, ids=[row[0] for row in INVALID_CONTRACTS])
def test_graph_view_may_not_change_its_fixed_contract(case, declared, path):
    with pytest.raises(CatalogError) as caught:
        check_fixed_contract(parse_parameters(declared, "p"), GRAPH_PARAMETERS, "p")
    assert (caught.value.path, caught.value.code) == (path, "graph_view")


def test_orphan_view_takes_exactly_limit():
    declared = parse_parameters({"limit": {"type": "integer", "default": 50}}, "p")
    assert check_fixed_contract(declared, ORPHAN_PARAMETERS, "p", code="graph_orphans_view") == ORPHAN_PARAMETERS
    with pytest.raises(CatalogError) as caught:
        check_fixed_contract(parse_parameters({**GRAPH_DECLARED}, "p"), ORPHAN_PARAMETERS, "p",
                             code="graph_orphans_view")
    assert (caught.value.path, caught.value.code) == ("p.seed", "graph_orphans_view")
