"""Strict YAML reading (pure; no database): JSON values only, duplicate keys are errors."""
from pathlib import Path

import pytest
import yaml

from catalog_app.catalog.errors import CatalogError
from catalog_app.catalog.yaml_io import _FastStrictLoader, _StrictLoader, parse_yaml


@pytest.mark.parametrize(("text", "expected"), [
    ("a: 1\nb: [x, 2.5, true, null]\n", {"a": 1, "b": ["x", 2.5, True, None]}),
    ("", None),
    ("# only a comment\n", None),
    ("- 1\n- two\n", [1, "two"]),
    ("day: 2026-01-01\n", {"day": "2026-01-01"}),
    ("at: 2026-01-01T00:00:00Z\n", {"at": "2026-01-01T00:00:00Z"}),
    ("at: !!timestamp 2026-01-01\n", {"at": "2026-01-01"}),
    ("n: 1.0\n", {"n": 1.0}),
    ("n: 1.0e+3\n", {"n": 1000.0}),
    ("'1': one\n", {"1": "one"}),
    ("2026-01-01: x\n", {"2026-01-01": "x"}),
    ("'on': x\n", {"on": "x"}),
    ("flag: yes\n", {"flag": True}),  # YAML 1.1 booleans are still booleans as values
    ("base: &b {x: 1, y: 2}\nmerged: {<<: *b, y: 3}\n", {"base": {"x": 1, "y": 2}, "merged": {"x": 1, "y": 3}}),
    ("a: &b {x: 1}\nc: *b\n", {"a": {"x": 1}, "c": {"x": 1}}),
    ("two: {<<: [{x: 1}, {x: 2, y: 2}]}\n", {"two": {"x": 1, "y": 2}}),
])
def test_valid_yaml_parses_to_json_values(text, expected):
    assert parse_yaml(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("a: 1\na: 2\n", "duplicate key 'a' at line 2, column 1"),
    ("outer:\n  inner: 1\n  inner: 2\n", "duplicate key 'inner' at line 3"),
    ("items:\n  - {name: x, name: y}\n", "duplicate key 'name'"),
    ("base: &b {x: 1}\nm: {<<: *b, y: 1, y: 2}\n", "duplicate key 'y'"),
    ("a: .inf\n", "not a finite number"),
    ("a: -.inf\n", "not a finite number"),
    ("a: [.nan]\n", "not a finite number"),
    ("1: one\n", "mapping key 1 at line 1, column 1 must be a string"),
    ("on: x\n", "mapping key True"),
    ("~: x\n", "mapping key None"),
    ("? [a, b]\n: 1\n", "mapping key a collection"),
    ("? {a: 1}\n: 1\n", "mapping key a collection"),
    ("s: !!set {a, b}\n", "has no JSON equivalent"),
    ("b: !!binary aGVsbG8=\n", "has no JSON equivalent"),
    ("o: !!omap [{a: 1}]\n", "has no JSON equivalent"),
    ("p: !!pairs [{a: 1}]\n", "has no JSON equivalent"),
    ("x: !!python/object/apply:os.getcwd []\n", "could not determine a constructor"),
    ("a: 1\n---\nb: 2\n", "expected a single document"),
    ("a: [1, 2\n", "expected ',' or ']'"),
    ("a: b: c\n", "mapping values are not allowed"),
    ("a: *missing\n", "undefined alias"),
    ("\tkey: 1\n", "found character '\\t'"),
])
def test_invalid_yaml_is_a_yaml_error(text, message):
    with pytest.raises(CatalogError) as raised:
        parse_yaml(text)
    assert raised.value.code == "yaml"
    assert raised.value.path == ""
    assert message in raised.value.message
    assert "\n" not in raised.value.message


CATALOG_FILES = sorted(path for folder in ("fixtures", "bench/catalogs")
                       for path in (Path(__file__).resolve().parents[2] / folder).rglob("*.yaml"))


def test_the_fast_reader_is_the_libyaml_one_on_this_build():
    # requirements.txt's PyYAML wheel ships libyaml; without it every catalog load would take the slow path.
    assert yaml.__with_libyaml__ and issubclass(_FastStrictLoader, yaml.CSafeLoader)


@pytest.mark.parametrize("path", CATALOG_FILES, ids=lambda path: str(path.relative_to(path.parents[2])))
def test_libyaml_and_the_pure_python_reader_read_every_shipped_catalog_file_alike(path):
    # Alike: the same values, or both refuse (fixtures of broken catalogs are among them).
    text = path.read_text(encoding="utf-8")
    assert _outcome(text, _FastStrictLoader) == _outcome(text, _StrictLoader)


def _outcome(text: str, loader):
    try:
        return yaml.load(text, Loader=loader)  # noqa: S506 - SafeLoader subclasses
    except (CatalogError, yaml.YAMLError):
        return "refused"
