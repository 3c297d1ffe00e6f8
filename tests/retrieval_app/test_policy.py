"""``conf/retrieval.yaml`` (the ``retrieval_policy`` family): load-time checks, with file,
dotted path and code, the built-in default, and re-checks when collections change later."""
import pytest

from catalog_app.catalog.compiler import compile_catalog
from catalog_app.catalog.errors import CatalogInvalid
from catalog_app.catalog.registry import Catalog
from retrieval_app.policy import SHARED, CollectionPolicy, Source, retrieval_policy
from tests.retrieval_app.factories import RETRIEVAL_CATALOG, catalog_dir

FILE = "conf/retrieval.yaml"


def issues(directory, stored=None):
    with pytest.raises(CatalogInvalid) as raised:
        compile_catalog(directory, stored or Catalog())
    return [(issue.file, issue.path, issue.code) for issue in raised.value.issues]


def test_fixture_policy_builds_typed_values():
    policy = retrieval_policy(compile_catalog(RETRIEVAL_CATALOG, Catalog()).catalog)
    assert policy.of("facts") == CollectionPolicy(Source(field="visibility"), "owner", Source(field="classification"),
                                                  False)
    assert policy.of("events") == CollectionPolicy(Source(field="visibility"), "owner", Source(literal="internal"),
                                                   False)
    assert policy.of("policies") == CollectionPolicy(Source(literal="shared"), None, Source(literal="platform"), True)
    assert policy.of("links") == SHARED
    assert policy.policy_collections == {"policies"}


def test_without_the_file_everything_is_shared_and_nothing_is_policy(tmp_path):
    directory = catalog_dir(tmp_path, drop=(FILE,))
    policy = retrieval_policy(compile_catalog(directory, Catalog()).catalog)
    assert policy.of("facts") == SHARED
    assert policy.of("facts").classification == Source()
    assert policy.policy_collections == frozenset()


@pytest.mark.parametrize(("text", "path", "code"), [
    ("collections:\n  nope: {policy: true}\n", "collections.nope", "reference"),
    ("collections:\n  facts: {visibility: labels, owner_agent_id: owner}\n", "collections.facts.visibility",
     "field_reference"),
    ("collections:\n  facts: {visibility: everyone}\n", "collections.facts.visibility", "schema"),
    ("collections:\n  facts: {visibility: private}\n", "collections.facts.owner_agent_id", "schema"),
    ("collections:\n  facts: {visibility: visibility}\n", "collections.facts.owner_agent_id", "schema"),
    ("collections:\n  facts: {visibility: private, owner_agent_id: agent}\n", "collections.facts.owner_agent_id",
     "field_reference"),
    ("collections:\n  facts: {classification: labels}\n", "collections.facts.classification", "field_reference"),
    ("collections:\n  facts: {policy: yes please}\n", "collections.facts.policy", "schema"),
    ("collections:\n  facts: {public: true}\n", "collections.facts.public", "schema"),
    ("collections: []\n", "collections", "schema"),
    ("policies: {}\n", "policies", "schema"),
])
def test_invalid_policy_files_name_path_and_code(tmp_path, text, path, code):
    assert issues(catalog_dir(tmp_path, files={FILE: text})) == [(FILE, path, code)]


def test_a_literal_classification_may_be_any_text(tmp_path):
    directory = catalog_dir(tmp_path, files={FILE: "collections:\n  summaries: {classification: confidential}\n"})
    policy = retrieval_policy(compile_catalog(directory, Catalog()).catalog)
    assert policy.of("summaries").classification == Source(literal="confidential")


def test_a_later_collection_version_that_drops_a_policy_field_does_not_load(tmp_path):
    stored = compile_catalog(RETRIEVAL_CATALOG, Catalog()).catalog
    facts_v2 = (RETRIEVAL_CATALOG / "collections" / "facts.yaml").read_text() \
        .replace("version: 1", "version: 2").replace("      owner: {path: content.owner, type: string, filter: true, "
                                                     "project: true}\n", "")
    update = tmp_path / "update"
    (update / "collections").mkdir(parents=True)
    (update / "collections" / "facts.yaml").write_text(facts_v2)
    assert issues(update, stored) == [(FILE, "collections.facts.owner_agent_id", "field_reference")]
