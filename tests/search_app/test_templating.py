"""View templating: placeholder discovery and checking, filling rules, and load-time samples."""
import copy

import pytest
import yaml

from catalog_app.catalog.errors import CatalogError
from search_app.views.parameters import bind_parameters, parse_parameters
from search_app.views.templating import check_placeholders, fill_template, placeholders, sample_values

CUSTOMER_CONTEXT = yaml.safe_load("""
parameters:
  entity: {type: string, required: true}
  task: {type: string, required: true}
query:
  q: "{{task}}"
  mode: hybrid
  scope:
    entities: ["{{entity}}"]
    collections: [customer_events]
  k: 20
  render: true
""")

UPCOMING_CALENDAR = yaml.safe_load("""
parameters:
  entity: {type: string, required: true}
  start: {type: datetime, required: true}
  end: {type: datetime, required: true}
query:
  mode: structured
  scope:
    entities: ["{{ entity }}"]
    collections: [calendar_events]
  where:
    starts_at: {gte: "{{start}}", lt: "{{end}}"}
  order_by:
    - {field: starts_at, direction: asc}
  k: 50
""")


def params(raw):
    return parse_parameters(raw, "views[0].parameters")


# ---------------------------------------------------------------- discovery and checks


def test_placeholders_found_anywhere_in_values():
    template = {"q": "about {{ task }} for {{entity}}", "scope": {"entities": ["{{entity}}"]}, "k": 5,
                "nested": [[{"x": "{{deep}}"}]], "{{key}}": "plain"}
    assert placeholders(template) == {"task", "entity", "deep"}


def test_spec_templates_reference_only_declared_parameters():
    for view in (CUSTOMER_CONTEXT, UPCOMING_CALENDAR):
        check_placeholders(view["query"], params(view["parameters"]), "views[0].query")


INVALID_TEMPLATES = [
    ("undeclared placeholder", {"scope": {"entities": ["{{customer}}"]}}, "views[0].query.scope.entities[0]"),
    ("undeclared in a longer string", {"q": "news about {{topic}}"}, "views[0].query.q"),
    ("unclosed placeholder", {"q": "{{entity}"}, "views[0].query.q"),
    ("two words in braces", {"q": "{{two words}}"}, "views[0].query.q"),
    ("empty braces", {"where": {"a": {"eq": "{{}}"}}}, "views[0].query.where.a.eq"),
    ("placeholder in a key", {"where": {"{{entity}}": {"eq": 1}}}, "views[0].query.where.{{entity}}"),
]


@pytest.mark.parametrize(("case", "template", "path"), INVALID_TEMPLATES, ids=[row[0] for row in INVALID_TEMPLATES])
def test_bad_placeholder_fails_at_load_with_the_path_of_its_string(case, template, path):
    with pytest.raises(CatalogError) as caught:
        check_placeholders(template, params({"entity": {"type": "string"}}), "views[0].query")
    assert (caught.value.path, caught.value.code) == (path, "template_reference")


# ---------------------------------------------------------------- filling


def test_customer_context_fills_as_the_spec_shows():
    values = {"entity": "customers/42", "task": "renewal call prep"}
    assert fill_template(CUSTOMER_CONTEXT["query"], values) == {
        "q": "renewal call prep", "mode": "hybrid",
        "scope": {"entities": ["customers/42"], "collections": ["customer_events"]}, "k": 20, "render": True,
    }


def test_datetimes_fill_as_given():
    values = {"entity": "people/maya", "start": "2026-07-17T09:00:00+02:00", "end": "2026-07-18T00:00:00Z"}
    filled = fill_template(UPCOMING_CALENDAR["query"], values)
    assert filled["scope"]["entities"] == ["people/maya"]
    assert filled["where"] == {"starts_at": {"gte": "2026-07-17T09:00:00+02:00", "lt": "2026-07-18T00:00:00Z"}}


def test_exact_placeholder_keeps_the_typed_value():
    template = {"k": "{{ k }}", "render": "{{render}}", "min": "{{ratio}}",
                "where": {"channel": {"in": "{{channels}}"}}}
    values = {"k": 20, "render": False, "ratio": 0.5, "channels": ["email", "call"]}
    assert fill_template(template, values) == {"k": 20, "render": False, "min": 0.5,
                                               "where": {"channel": {"in": ["email", "call"]}}}


def test_a_list_value_in_a_list_item_is_not_spliced():
    assert fill_template({"entities": ["{{channels}}"]}, {"channels": ["a", "b"]}) == {"entities": [["a", "b"]]}
    assert fill_template({"entities": ["{{entity}}"]}, {"entity": "x"}) == {"entities": ["x"]}


@pytest.mark.parametrize(("value", "text"), [
    ("renewal", "about renewal now"), (20, "about 20 now"), (0.5, "about 0.5 now"), (True, "about true now"),
    (False, "about false now"), (["email", "call"], "about email, call now"), ([], "about  now"),
    ("2026-07-17T09:00:00Z", "about 2026-07-17T09:00:00Z now"),
])
def test_embedded_placeholder_uses_the_text_form(value, text):
    assert fill_template({"q": "about {{x}} now"}, {"x": value}) == {"q": text}


def test_omitted_optional_parameter_removes_its_key_or_item():
    template = {"q": "{{task}}", "scope": {"entities": ["{{entity}}", "fixed"], "collections": ["c"]},
                "where": {"channel": {"in": "{{channels}}"}}, "note": "for {{entity}}!"}
    assert fill_template(template, {"task": "t"}) == {
        "q": "t", "scope": {"entities": ["fixed"], "collections": ["c"]},
        "where": {"channel": {}},  # removal does not cascade
        "note": "for !",  # embedded: the empty string
    }


def test_fill_never_mutates_the_template_or_aliases_values():
    template = {"where": {"channel": {"in": "{{channels}}"}}, "scope": {"entities": ["{{e}}"]}}
    before = copy.deepcopy(template)
    values = {"channels": ["email"], "e": "x"}
    filled = fill_template(template, values)
    filled["where"]["channel"]["in"].append("call")
    assert template == before and values["channels"] == ["email"]


def test_non_string_scalars_pass_through():
    assert fill_template({"k": 5, "r": True, "n": None, "f": 0.25}, {}) == {"k": 5, "r": True, "n": None, "f": 0.25}


def test_a_whole_template_that_is_an_omitted_placeholder_fills_to_none():
    assert fill_template("{{x}}", {}) is None


# ---------------------------------------------------------------- load-time samples

SAMPLE_PARAMETERS = yaml.safe_load("""
entity: {type: string, required: true, min_length: 3, max_length: 128}
horizon: {type: string, default: week, enum: [day, week, quarter]}
mood: {type: string, enum: [calm, busy]}
channels: {type: string_array, default: [], item_enum: [email, call, note], max_items: 3}
tags: {type: string_array, item_enum: [red, blue], min_items: 2}
topics: {type: string_array}
nothing: {type: string_array, max_items: 0}
k: {type: integer, default: 20, minimum: 1, maximum: 100}
offset: {type: integer, minimum: 5}
below: {type: integer, maximum: -2}
ratio: {type: number, minimum: 0.25, maximum: 0.75}
count: {type: number}
flag: {type: boolean}
when: {type: datetime}
label: {type: string}
blank: {type: string, max_length: 0}
""")


def test_sample_values_follow_default_then_enum_then_minimal():
    assert sample_values(params(SAMPLE_PARAMETERS)) == {
        "entity": "aaa", "horizon": "week", "mood": "calm", "channels": [], "tags": ["red", "red"],
        "topics": ["a"], "nothing": [], "k": 20, "offset": 5, "below": -2, "ratio": 0.25, "count": 1,
        "flag": False, "when": "2026-01-01T00:00:00Z", "label": "a", "blank": "",
    }


def test_sample_values_are_valid_for_their_own_parameters():
    parameters = params(SAMPLE_PARAMETERS)
    samples = sample_values(parameters)
    assert bind_parameters(parameters, samples) == samples


def test_sample_renders_every_placeholder():
    parameters = params(UPCOMING_CALENDAR["parameters"])
    filled = fill_template(UPCOMING_CALENDAR["query"], sample_values(parameters))
    assert filled["scope"]["entities"] == ["a"]
    assert filled["where"]["starts_at"] == {"gte": "2026-01-01T00:00:00Z", "lt": "2026-01-01T00:00:00Z"}
