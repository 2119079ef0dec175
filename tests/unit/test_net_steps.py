"""--net's fold in two halves (rollback/render/net.py): each partition folds its changes per key into
steps (NetChains), the driver applies the steps of every partition in order (NetFold.add_steps). On
any sequence of changes, split into partitions and rows events anywhere, the rows, their order and
their refusals must be those of the fold change by change (NetFold.add_rows).

The sequences are not only those a server writes: keys moved, taken again, deleted twice, inserted
where a row is, so that every refusal and every row the fold takes as new is compared too.
"""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from rollback.base.errors import NetRefused
from rollback.render.net import NetChains, NetFold, NetRow, execution_order
from tests.support.examples import examples

TABLE = "`shop`.`items`"
UNIQUES = {TABLE: [((0,), False), ((1,), False)]}

# A step of the generator: (kind, key, new key, u, v, follow the rows as they are?). Followed, a step
# changes the row its key holds as a server would (or inserts where the key is free); not followed, it
# writes the images as drawn, which a server would not, so that refusals and rows the fold takes as
# new come up too.
ops = st.lists(
    st.tuples(
        st.sampled_from(["insert", "update", "delete"]),
        st.integers(0, 3),
        st.integers(0, 3),
        st.integers(0, 2),
        st.integers(0, 1),
        st.integers(0, 7),
    ),
    max_size=30,
)


def _changes(steps: list[tuple[str, int, int, int, int, int]]) -> list[tuple[str, Any]]:
    state: dict[int, tuple[int, int, int]] = {}
    changes: list[tuple[str, Any]] = []
    for kind, key, new_key, u, v, follow in steps:
        drawn = (key, u, v)
        if not follow:  # one step in eight
            changes.append((kind, drawn if kind != "update" else (drawn, (new_key, u, v))))
            continue
        old = state.get(key)
        if kind == "insert" and old is None:
            state[key] = drawn
            changes.append(("insert", drawn))
        elif kind == "delete" and old is not None:
            del state[key]
            changes.append(("delete", old))
        elif kind == "update" and old is not None:
            new = (new_key if follow == 1 else key, u, v)  # one in seven moves the key
            if new[0] == key or new[0] not in state:
                del state[key]
                state[new[0]] = new
                changes.append(("update", (old, new)))
    return changes


def _events(changes: list[tuple[str, Any]], cuts: set[int]) -> list[tuple[str, list[Any]]]:
    """Rows events: runs of one kind, also cut where `cuts` says."""
    batches: list[tuple[str, list[Any]]] = []
    for index, (kind, row) in enumerate(changes):
        if batches and batches[-1][0] == kind and index not in cuts:
            batches[-1][1].append(row)
        else:
            batches.append((kind, [row]))
    return batches


def _where(index: int, number: int) -> tuple[str, int, int, int, None]:
    return ("binlog.000001", 100 + index, number, index, None)


def _describe(rows: list[NetRow]) -> list[tuple[Any, ...]]:
    return [(r.table, r.before, r.after, r.seq, r.where) for r in rows]


def _outcome(fold: NetFold) -> tuple[Any, ...]:
    rows = fold.rows()
    try:
        order = _describe(execution_order(rows, UNIQUES))
    except NetRefused as refused:
        order = [str(refused)]
    return ("rows", _describe(rows), order)


def _one_by_one(batches: list[tuple[str, list[Any]]]) -> tuple[Any, ...]:
    fold = NetFold(TABLE, (0,))
    seq = 0
    try:
        for index, (kind, rows) in enumerate(batches):
            file, pos, _number, tx, gtid = _where(index, 0)
            seq = fold.add_rows(kind, rows, seq, file, pos, range(len(rows)), tx, gtid)
    except NetRefused as refused:
        return ("refused", str(refused), fold.refused_seq)
    return _outcome(fold)


def _in_steps(
    batches: list[tuple[str, list[Any]]], ends: set[int], flushes: set[int], images: bool
) -> tuple[Any, ...]:
    fold = NetFold(TABLE, (0,))
    starts = [0]
    for _kind, rows in batches:
        starts.append(starts[-1] + len(rows))

    def where_of(index: int, number: int) -> tuple[int, Any]:
        return starts[index] + number, _where(index, number)

    chains = NetChains((0,))
    changed = False  # the partition has seen a change other than a DELETE
    try:
        for index, (kind, rows) in enumerate(batches):
            if kind == "delete" and images and not changed:
                file, pos, _number, tx, gtid = _where(index, 0)
                fold.add_rows(kind, rows, starts[index], file, pos, range(len(rows)), tx, gtid)
            else:
                changed = changed or kind != "delete"
                chains.add(kind, rows, index)
            if index in flushes or index in ends:
                fold.add_steps(chains.flush(), where_of)
            if index in ends:
                changed = False
        fold.add_steps(chains.flush(), where_of)
    except NetRefused as refused:
        return ("refused", str(refused), fold.refused_seq)
    return _outcome(fold)


@settings(max_examples=examples(600), deadline=None)
@example(
    [("insert", 1, 0, 0, 0, 2), ("insert", 2, 0, 1, 0, 2), ("update", 1, 0, 0, 1, 2)],
    set(),
    set(),
    set(),
    False,
)
@given(
    ops, st.sets(st.integers(0, 29)), st.sets(st.integers(0, 29)), st.sets(st.integers(0, 29)), st.booleans()
)
def test_the_steps_of_partitions_fold_to_what_the_changes_fold_to_one_by_one(
    steps, cuts, ends, flushes, images
):
    batches = _events(_changes(steps), cuts)
    assert _in_steps(batches, ends, flushes, images) == _one_by_one(batches)


def test_a_key_inserted_updated_and_deleted_in_a_partition_is_one_step_and_no_row():
    chains = NetChains((0,))
    chains.add("insert", [(1, 1, 0), (2, 2, 0)], 0)
    chains.add("update", [((1, 1, 0), (1, 1, 1)), ((2, 2, 0), (2, 2, 1))], 1)
    chains.add("delete", [(1, 1, 1)], 2)
    steps = chains.flush()
    assert [(s[0], s[1], s[5]) for s in steps] == [(0, 1, None), (0, 2, (2, 2, 1))]
    fold = NetFold(TABLE, (0,))
    fold.add_steps(steps, lambda index, number: (index * 2 + number, _where(index, number)))
    [row] = fold.rows()
    assert (row.kind, row.after, row.seq) == ("insert", (2, 2, 1), 3)


def test_a_moved_key_ends_both_keys_steps():
    chains = NetChains((0,))
    chains.add("update", [((1, 1, 0), (1, 1, 1)), ((1, 1, 1), (3, 1, 1)), ((3, 1, 1), (3, 1, 2))], 0)
    assert [s[0] for s in chains.flush()] == [1, 3, 1]
