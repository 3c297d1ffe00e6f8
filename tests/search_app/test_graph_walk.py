"""The pure path walk behind graph views and graph boost (views-and-search "Graph views";
reference A.4 row 6): every prefix is a path, paths are ordered by depth, then node list,
then link ids, a path never revisits a node, and ``truncated`` means one more path existed.

The graph has cycles (a->b->c->a, a<->b) and a parallel pair (a->b "uses", b->a "owns"),
given to ``walk`` as an in-memory ``neighbours`` callback built with ``steps_from`` (in
production the callback filters links by direction and predicates in SQL).
"""
import pytest

from search_app.graph.walk import Link, Step, steps_from, walk

LINKS = (
    Link("e1", "a", "b", "uses"),
    Link("e2", "b", "c", "uses"),
    Link("e3", "c", "a", "uses"),
    Link("e4", "a", "d", "owns"),
    Link("e5", "d", "c", "uses"),
    Link("e6", "b", "a", "owns"),
    Link("e7", "b", "e", "uses"),
)


def neighbours(direction: str, predicates: tuple[str, ...] = (), calls: list | None = None):
    links = [link for link in LINKS if not predicates or link.predicate in predicates]

    def fetch(nodes: set[str]) -> dict[str, list[Step]]:
        if calls is not None:
            calls.append(set(nodes))
        return {node: steps_from(node, links, direction) for node in nodes}
    return fetch


def run(direction="out", depth=4, limit=100, predicates=(), seed="a"):
    return walk(seed, depth=depth, limit=limit, neighbours=neighbours(direction, predicates))


def shape(result):
    return [("".join(path.nodes), tuple(link.id for link in path.links), path.depth) for path in result.paths]


OUT = [("ab", ("e1",), 1), ("ad", ("e4",), 1),
       ("abc", ("e1", "e2"), 2), ("abe", ("e1", "e7"), 2), ("adc", ("e4", "e5"), 2)]
IN = [("ab", ("e6",), 1), ("ac", ("e3",), 1), ("acb", ("e3", "e2"), 2), ("acd", ("e3", "e5"), 2)]
BOTH = [
    ("ab", ("e1",), 1), ("ab", ("e6",), 1), ("ac", ("e3",), 1), ("ad", ("e4",), 1),
    ("abc", ("e1", "e2"), 2), ("abc", ("e6", "e2"), 2), ("abe", ("e1", "e7"), 2), ("abe", ("e6", "e7"), 2),
    ("acb", ("e3", "e2"), 2), ("acd", ("e3", "e5"), 2), ("adc", ("e4", "e5"), 2),
    ("abcd", ("e1", "e2", "e5"), 3), ("abcd", ("e6", "e2", "e5"), 3), ("acbe", ("e3", "e2", "e7"), 3),
    ("adcb", ("e4", "e5", "e2"), 3),
    ("adcbe", ("e4", "e5", "e2", "e7"), 4),
]


def all_simple_paths(seed, direction, depth, predicates=()):
    """An independent oracle: every simple path up to ``depth``, sorted the documented way."""
    links = [link for link in LINKS if not predicates or link.predicate in predicates]
    found = []

    def extend(nodes, ids):
        if len(ids) == depth:
            return
        for step in steps_from(nodes[-1], links, direction):
            if step.node not in nodes:
                found.append((nodes + (step.node,), ids + (step.link.id,)))
                extend(nodes + (step.node,), ids + (step.link.id,))
    extend((seed,), ())
    found.sort(key=lambda path: (len(path[1]), path[0], path[1]))
    return [("".join(nodes), ids, len(ids)) for nodes, ids in found]


# --- steps_from: direction, and where predicates are applied -------------------------------------

@pytest.mark.parametrize("direction, expected", [
    ("out", [("c", "e2"), ("a", "e6"), ("e", "e7")]),
    ("in", [("a", "e1")]),
    ("both", [("a", "e1"), ("c", "e2"), ("a", "e6"), ("e", "e7")]),
])
def test_steps_from_follows_the_direction_in_link_order(direction, expected):
    assert [(step.node, step.link.id) for step in steps_from("b", LINKS, direction)] == expected


def test_steps_from_an_unknown_direction_takes_no_step():
    assert steps_from("b", LINKS, "sideways") == []


def test_a_self_loop_offers_the_node_itself_both_ways():
    loop = Link("x", "n", "n", "self")
    assert [step.node for step in steps_from("n", [loop], "both")] == ["n", "n"]
    assert walk("n", depth=3, limit=10, neighbours=lambda nodes: {"n": steps_from("n", [loop], "both")}).paths == ()


# --- exact paths per direction --------------------------------------------------------------------

@pytest.mark.parametrize("direction, expected", [("out", OUT), ("in", IN), ("both", BOTH)])
def test_walk_returns_every_prefix_in_the_documented_order(direction, expected):
    result = run(direction)
    assert shape(result) == expected
    assert result.truncated is False


@pytest.mark.parametrize("direction", ["out", "in", "both"])
@pytest.mark.parametrize("depth", [1, 2, 3, 4, 6])
def test_walk_equals_the_sorted_simple_paths(direction, depth):
    assert shape(run(direction, depth=depth)) == all_simple_paths("a", direction, depth)


def test_parallel_links_order_children_by_nodes_before_link_ids():
    # a-b is reachable over e1 and e6: both (a, b, c) paths come before both (a, b, e) paths.
    assert shape(run("both", depth=2))[4:8] == [("abc", ("e1", "e2"), 2), ("abc", ("e6", "e2"), 2),
                                                ("abe", ("e1", "e7"), 2), ("abe", ("e6", "e7"), 2)]


@pytest.mark.parametrize("depth, expected", [(1, OUT[:2]), (2, OUT), (3, OUT), (16, OUT)])
def test_depth_bounds_the_number_of_links(depth, expected):
    assert shape(run("out", depth=depth)) == expected


def test_a_path_never_revisits_a_node_even_around_cycles():
    for direction in ("out", "in", "both"):
        for path in run(direction, depth=16).paths:
            assert len(set(path.nodes)) == len(path.nodes)
            assert len(path.nodes) == path.depth + 1 == len(path.links) + 1


def test_predicates_restrict_the_links_the_callback_offers():
    assert shape(run("out", predicates=("uses",))) == [("ab", ("e1",), 1), ("abc", ("e1", "e2"), 2),
                                                        ("abe", ("e1", "e7"), 2)]
    assert shape(run("out", predicates=("owns",))) == [("ad", ("e4",), 1)]
    assert shape(run("out", predicates=("nothing",))) == []


# --- nodes, links, distances ------------------------------------------------------------------------

def test_nodes_are_the_sorted_set_the_paths_reach():
    assert run("out").nodes == ["a", "b", "c", "d", "e"]
    assert run("in").nodes == ["a", "b", "c", "d"]
    assert run("out", depth=1).nodes == ["a", "b", "d"]


def test_a_seed_without_links_reaches_nothing():
    calls = []
    result = walk("z", depth=4, limit=10, neighbours=neighbours("out", calls=calls))
    assert result.paths == () and result.nodes == [] and result.links == [] and result.truncated is False
    assert calls == [{"z"}]  # the walk stops at the first empty level


def test_neighbours_is_asked_once_per_level_for_the_frontier():
    calls = []
    walk("a", depth=4, limit=100, neighbours=neighbours("out", calls=calls))
    assert calls == [{"a"}, {"b", "d"}, {"c", "e"}]


def test_links_lists_each_used_link_once_in_order_of_first_use():
    assert [link.id for link in run("out").links] == ["e1", "e4", "e2", "e7", "e5"]
    assert [link.id for link in run("in").links] == ["e6", "e3", "e2", "e5"]


@pytest.mark.parametrize("direction, expected", [
    ("out", {"a": 0, "b": 1, "d": 1, "c": 2, "e": 2}),
    ("in", {"a": 0, "b": 1, "c": 1, "d": 2}),
    ("both", {"a": 0, "b": 1, "c": 1, "d": 1, "e": 2}),
])
def test_distances_are_the_shortest_index_on_any_path(direction, expected):
    assert run(direction).distances("a") == expected


def test_distances_include_the_seed_when_nothing_is_reached():
    assert walk("z", depth=2, limit=5, neighbours=neighbours("both")).distances("z") == {"z": 0}


def test_distances_only_cover_the_returned_paths():
    assert run("out", limit=2).distances("a") == {"a": 0, "b": 1, "d": 1}


# --- limit and truncated --------------------------------------------------------------------------

@pytest.mark.parametrize("direction, expected", [("out", OUT), ("in", IN), ("both", BOTH)])
def test_limit_exactly_the_number_of_paths_is_not_truncated(direction, expected):
    result = run(direction, limit=len(expected))
    assert shape(result) == expected and result.truncated is False


@pytest.mark.parametrize("direction, expected", [("out", OUT), ("in", IN), ("both", BOTH)])
def test_one_path_fewer_than_exist_is_truncated(direction, expected):
    result = run(direction, limit=len(expected) - 1)
    assert shape(result) == expected[:-1] and result.truncated is True


@pytest.mark.parametrize("limit", [1, 2, 3, 4, 7, 10, 15])
def test_a_truncated_walk_returns_the_first_paths_in_order(limit):
    result = run("both", limit=limit)
    assert shape(result) == BOTH[:limit] and result.truncated is True


def test_limit_at_a_level_boundary_is_truncated_only_if_the_next_level_has_paths():
    assert run("out", depth=1, limit=2).truncated is False  # exactly the two depth-1 paths exist
    assert run("out", depth=2, limit=2).truncated is True  # depth-2 paths exist beyond them
    assert run("out", depth=3, limit=5).truncated is False  # depth 3 adds nothing (cycles only)
