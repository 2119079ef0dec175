"""The import graph of the engine and the service, read with `ast` (no module is imported).

Data flows one way (docs/ARCHITECTURE.md): request -> source -> plan -> decode -> select -> invert
-> render -> partition/engines -> merge -> sink/execute -> job -> the door -> the CLI. A module may
import modules of its own layer and of the layers to its left, never one to its right. Every import
counts, at module level or inside a function; imports under `if TYPE_CHECKING:` count too (none is
exempt). `app/` imports the engine only through its door, the `rollback` package itself. No import
cycle exists anywhere, in the engine or the service.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

# The layers, left to right; a module belongs to the layer of the longest prefix it starts with
# (a prefix names a package or module and every module below it). Keep in step with docs/ARCHITECTURE.md.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("foundations", ("rollback.base", "rollback.binlog", "rollback.schema", "rollback.request.predicate")),
    ("request", ("rollback.request",)),
    ("source", ("rollback.pipeline.storage", "rollback.sources")),
    ("plan", ("rollback.pipeline.order", "rollback.pipeline.savepoints", "rollback.pipeline.plan")),
    ("decode", ("rollback.render.records", "rollback.render.change_lines", "rollback.render.decode_files")),
    # the rest of rollback/render/: invert, sql, statement_batches, net
    ("invert and render", ("rollback.render",)),
    # the rest of rollback/pipeline/: holdback, selection, dependencies, plan_lines, spill, file_copy, parts,
    # partition, contents, session, warm, staging, engines/, changes
    ("partition and engines", ("rollback.pipeline",)),
    # every module of rollback/job/ but run: report, header, merge, net_script, guard, ddl_modes,
    # schema_proof, range_notes
    ("merge and checks", ("rollback.job",)),
    ("execute", ("rollback.target",)),
    ("job", ("rollback.job.run",)),
    ("door", ("rollback",)),
    ("cli", ("rollback.cli",)),
]

# The engine's packages, left to right in the data flow: a package imports its own modules and those of
# the packages to its left, never one to its right. `job` and `target` are both sinks of `pipeline`'s
# parts and neither imports the other; the door (`rollback/__init__.py`) imports every package, and only
# `cli` (and the service) import the door.
PACKAGES = ["base", "binlog", "schema", "request", "sources", "render", "pipeline", "job", "target", "cli"]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def modules(package: str) -> dict[str, Path]:
    return {module_name(p): p for p in sorted((REPO / package).rglob("*.py"))}


def imports_of(name: str, path: Path) -> set[str]:
    """Every module `name` imports, anywhere in its body (absolute names; `from x import y` gives
    x.y when that is a module of ours, else x)."""
    ours = {**modules("rollback"), **modules("app")}
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.add(full if full in ours else base)
    return {m for m in found if m.split(".")[0] in ("rollback", "app")}


def layer_of(name: str) -> int:
    best = None
    for index, (_label, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and (best is None or len(prefix) > best[1]):
                best = (index, len(prefix))
    assert best is not None, f"{name} is in no layer: add it to LAYERS and docs/ARCHITECTURE.md"
    return best[0]


def engine_graph() -> dict[str, set[str]]:
    return {name: imports_of(name, path) for name, path in modules("rollback").items()}


def test_every_engine_module_has_a_layer():
    for name in modules("rollback"):
        layer_of(name)


def test_the_engine_never_imports_the_service():
    bad = [(m, i) for m, targets in engine_graph().items() for i in targets if i.split(".")[0] == "app"]
    assert not bad, f"rollback imports app: {bad}"


def test_no_module_imports_one_to_its_right_in_the_data_flow():
    bad = []
    for module, targets in engine_graph().items():
        for target in targets:
            if target.split(".")[0] == "rollback" and layer_of(target) > layer_of(module):
                bad.append(
                    f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} ({LAYERS[layer_of(target)][0]})"
                )
    assert not bad, "\n".join(bad)


def package_of(name: str) -> str | None:
    """The engine package a module belongs to (None for the door and the compiled core)."""
    parts = name.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and parts[1] in PACKAGES) else None


def test_every_engine_module_is_in_a_package_and_the_top_level_stays_small():
    loose = sorted(n for n in modules("rollback") if n != "rollback" and package_of(n) is None)
    assert not loose, f"modules outside the packages {PACKAGES}: {loose}"
    top = sorted(p.name for p in (REPO / "rollback").iterdir() if not p.name.startswith((".", "__pycache__")))
    tracked = [n for n in top if not n.endswith((".so", ".c"))]  # build outputs of _speedups.pyx
    assert len(tracked) <= 12, tracked


def test_every_package_says_what_it_owns_and_what_it_may_import():
    for package in PACKAGES:
        doc = ast.get_docstring(
            ast.parse((REPO / "rollback" / package / "__init__.py").read_text(encoding="utf-8"))
        )
        assert doc and "May import" in doc, f"rollback/{package}/__init__.py: say what it owns and may import"


def test_no_package_imports_one_to_its_right():
    bad = []
    for module, targets in engine_graph().items():
        source = package_of(module)
        for target in targets:
            into = package_of(target) if target.startswith("rollback.") else None
            if source is None or into is None or into == source:
                continue
            if PACKAGES.index(into) > PACKAGES.index(source) or {source, into} == {"job", "target"}:
                bad.append(f"{module} ({source}) imports {target} ({into})")
    assert not bad, "\n".join(bad)


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph, as the modules along it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in graph:
                continue
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state:
                cycle = visit(target)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def service_graph() -> dict[str, set[str]]:
    return {name: imports_of(name, path) for name, path in modules("app").items()}


def test_no_import_cycle_anywhere():
    # The door (`rollback`) imports most modules to re-export them; a module importing the door
    # back is a cycle like any other. The service's modules count too: a cycle hidden in a
    # function-level import is still a cycle.
    cycle = find_cycle({**engine_graph(), **service_graph()})
    assert cycle is None, " -> ".join(cycle)


def test_an_import_inside_a_function_or_under_type_checking_is_an_edge(tmp_path):
    path = tmp_path / "module.py"
    path.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from app.services.executions import RunRequest\n"
        "def run():\n    from app.services import job_process\n",
        encoding="utf-8",
    )
    assert imports_of("app.services.example", path) == {"app.services.executions", "app.services.job_process"}


def test_find_cycle_sees_a_cycle_through_three_modules():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


@pytest.mark.parametrize("name", sorted(modules("app")))
def test_the_service_imports_the_engine_only_through_its_door(name):
    bad = sorted(i for i in imports_of(name, modules("app")[name]) if i.startswith("rollback."))
    assert not bad, f"{name} imports {bad}; import from `rollback` (its __all__) instead"


def test_the_cli_imports_the_engine_only_through_its_door():
    bad = sorted(
        i
        for i in imports_of("rollback.cli.commands", modules("rollback")["rollback.cli.commands"])
        if i.startswith("rollback.") and layer_of(i) != layer_of("rollback.cli.commands")
    )
    assert not bad, f"rollback.cli.commands imports {bad}; import from `rollback` instead"


def test_the_door_lists_every_name_it_exports_and_nothing_more():
    tree = ast.parse((REPO / "rollback" / "__init__.py").read_text(encoding="utf-8"))
    # the door's names load on first use: the imports for type checkers (under TYPE_CHECKING) and
    # `_WHERE`, the table its `__getattr__` reads, must name the same things in the same modules
    imports = {
        alias.asname or alias.name: (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rollback")
        for alias in node.names
    }
    (where,) = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_WHERE" and node.value
    ]
    assert {name: tuple(at) for name, at in where.items()} == imports
    imported = set(imports)
    (listed,) = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets)
    ]
    assert sorted(listed) == sorted(set(listed)), "a name is listed twice in __all__"
    assert set(listed) == imported, set(listed) ^ imported


def test_every_door_name_loads_and_importing_the_door_loads_no_engine_module():
    import subprocess
    import sys

    probe = (
        "import sys, rollback; before = sorted(m for m in sys.modules if m.startswith('rollback.')); "
        "[getattr(rollback, name) for name in rollback.__all__]; print(before)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_docs_list_every_name_of_the_door_and_every_layer():
    import rollback

    text = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    missing = [name for name in rollback.__all__ if f"`{name}`" not in text]
    assert not missing, f"docs/ARCHITECTURE.md does not name {missing}"
    assert all(f"| {label} |" in text for label, _prefixes in LAYERS[:-2])
