"""--net's loops the compiled core runs for a partition (rollback/_speedups.pyx) against their
pure-Python twins: NetChains.add's fold of a rows event into steps (net_chain), the net rows of a
partition's share read from those steps (net_rows, render/net_local.py), and the check that lets a
part file's images go through marshal instead of pickle (marshal_safe, parts.dump_values).

The changes are drawn freely, not as a server would write them (keys moved onto held keys, deleted
twice, images as lists): the two paths must agree on every input, not only on valid ones.
"""

from __future__ import annotations

from decimal import Decimal
from operator import itemgetter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from rollback.pipeline.parts import dump_values, load_values, marshal_safe
from rollback.render.net import NetChains
from rollback.render.net_local import net_rows
from tests.support.examples import examples
from tests.support.hotpath import compiled_core, hot_path, same_values

CORE = compiled_core()  # not built: the module fails, it is never skipped

_value = st.one_of(st.none(), st.integers(0, 3), st.sampled_from(["a", "b", "A "]))
_image = st.tuples(_value, _value, _value)
_change = st.one_of(
    st.tuples(st.sampled_from(["insert", "delete"]), _image),
    st.tuples(st.just("update"), st.tuples(_image, _image)),
)


def _events(draws: list[tuple[str, Any]], cuts: set[int], lists: set[int]) -> list[tuple[str, list[Any]]]:
    """Rows events: runs of one kind, also cut where `cuts` says; an image in `lists` comes as a list."""
    batches: list[tuple[str, list[Any]]] = []
    for index, (kind, row) in enumerate(draws):
        if index in lists:
            row = [list(row[0]), list(row[1])] if kind == "update" else list(row)
        if batches and batches[-1][0] == kind and index not in cuts:
            batches[-1][1].append(row)
        else:
            batches.append((kind, [row]))
    return batches


def _chain(core: Any, key: tuple[int, ...], batches: list[tuple[str, list[Any]]], flushes: set[int]) -> Any:
    with hot_path(core):
        chains = NetChains(key)
    seen = []
    for index, (kind, rows) in enumerate(batches):
        chains.add(kind, rows, index)
        seen.append(("open", sorted(chains.open.items(), key=repr)))
        if index in flushes:
            seen.append(("flushed", chains.flush()))
    seen.append(("flushed", chains.flush()))
    return seen


@settings(max_examples=examples(600), deadline=None)
@given(
    st.lists(_change, max_size=40),
    st.sampled_from([(0,), (1,), (0, 2), (2, 0, 1)]),
    st.sets(st.integers(0, 39)),
    st.sets(st.integers(0, 39)),
    st.sets(st.integers(0, 39)),
)
def test_the_compiled_chain_makes_the_pure_chains_steps(draws, key, cuts, lists, flushes):
    batches = _events(draws, cuts, lists)
    compiled, pure = _chain(CORE, key, batches, flushes), _chain(None, key, batches, flushes)
    assert same_values(compiled, pure)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(_change, max_size=40), st.sampled_from([(0,), (0, 2)]), st.sets(st.integers(0, 39)))
def test_the_compiled_net_rows_are_the_pure_ones(draws, key, cuts):
    """The net rows of the steps a chain makes (a key moved among them too: None), on both paths."""
    steps = _chain(None, key, _events(draws, cuts, set()), set())[-1][1]
    found = []
    for twin in (CORE.net_rows, net_rows):
        items: list = []
        keys: list = []
        found.append((twin(3, steps, items, keys), items, keys))
    assert same_values(found[0], found[1])
    kinds, items, keys = found[1]
    if kinds is not None:
        assert keys == [step[1] for step in steps]
        assert {item[2] for item in items} == {
            k for k, on in zip(("insert", "update", "delete"), kinds, strict=True) if on
        }


def _as_bytes(value: Any) -> Any:
    """An image as bytes of its own (image_rows keeps each image as the bytes it takes in its event)."""
    return repr(tuple(value)).encode()


def _keyed(core: Any, key: tuple[int, ...], batches: list[tuple[str, list[Any]]]) -> list:
    """The steps of the events given as keys and images as bytes (NetChains.add_images), the bytes
    read back into the images they stand for."""
    with hot_path(core):
        chains = NetChains(key)
    get = itemgetter(*key)
    for index, (kind, rows) in enumerate(batches):
        images = [image for row in rows for image in (row if kind == "update" else (row,))]
        chains.add_images(kind, [get(image) for image in images], [_as_bytes(i) for i in images], index)
    back = {
        _as_bytes(image): tuple(image)
        for _kind, rows in batches
        for row in rows
        for image in (row if _kind == "update" else (row,))
    }

    def read(value: Any) -> Any:
        if type(value) is tuple:  # a moved key's pair
            return tuple(back[v] for v in value)
        return back.get(value, value) if type(value) is bytes else value

    return [[read(v) if i in (2, 5) else v for i, v in enumerate(step)] for step in chains.flush()]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(_change, max_size=40), st.sampled_from([(0,), (1,), (0, 2)]), st.sets(st.integers(0, 39)))
def test_chains_of_images_as_bytes_make_the_steps_of_the_decoded_rows(draws, key, cuts):
    """The events a partition takes from the images' bytes (net_chain_keyed, and its twin) chain as
    the decoded rows do (net_chain): the same steps, each image the bytes of the decoded one."""
    batches = _events(draws, cuts, set())
    decoded = _chain(CORE, key, batches, set())[-1][1]
    for core in (CORE, None):
        assert same_values(_keyed(core, key, batches), decoded)


def test_the_compiled_chain_is_the_one_a_partition_uses():
    with hot_path(CORE):
        chains = NetChains((0,))
    chains.add("insert", [[1, "a"]], 7)
    assert chains.flush() == [[0, 1, None, 7, 0, (1, "a"), 7, 0]]
    with hot_path(None):
        assert NetChains((0,))._core is None


class _Text(str):
    pass


_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(st.characters(blacklist_categories=()), max_size=3),  # surrogates too
    st.binary(max_size=3),
    st.binary(max_size=3).map(bytearray),
    st.decimals(allow_nan=False).map(Decimal),
    st.text(max_size=2).map(_Text),
)
_values = st.recursive(
    _leaf, lambda inner: st.lists(inner, max_size=3) | st.tuples(inner, inner), max_leaves=12
)


@settings(max_examples=examples(600), deadline=None)
@given(_values)
def test_images_come_back_from_the_part_file_as_they_went_in_on_both_paths(values):
    assert CORE.marshal_safe(values) == marshal_safe(values)
    for core in (CORE, None):
        with hot_path(core):
            data, marshalled = dump_values(values)
        assert marshalled == marshal_safe(values)
        assert same_values(load_values(data, marshalled), values)


def test_plain_rows_go_through_marshal_and_others_through_pickle():
    assert dump_values([(1, "a", b"b", None, 1.5, True)])[1]
    assert not dump_values([(1, Decimal("1.5"))])[1]
    assert not dump_values([(1, bytearray(b"x"))])[1]  # marshal would give it back as bytes
    assert not dump_values([(_Text("a"),)])[1]
