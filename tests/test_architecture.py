"""The package's shape, checked from its source: layers import only downwards, no module-level
import cycle, interfaces reach the service only through its public methods, and no SQL outside
storage. (In the manner of basic-memory's architecture test.)"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "mnemo_mcp"
STDLIB = set(sys.stdlib_module_names) | {"__future__"}
INTERFACES = (
    "mnemo_mcp.server",
    "mnemo_mcp.tools",
    "mnemo_mcp.cli",
    "mnemo_mcp.launcher",
    "mnemo_mcp.recovery_cli",
    "mnemo_mcp.claude_install",
    "mnemo_mcp.installers",
    "mnemo_mcp.hooks",
    "mnemo_mcp.web",
)
SHARED = (
    "mnemo_mcp.errors",
    "mnemo_mcp.paths",
    "mnemo_mcp.config",
    "mnemo_mcp.models",
    "mnemo_mcp.validate",
    "mnemo_mcp.project",
    "mnemo_mcp.core",
)


def _name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_name(p): p for p in PACKAGE.rglob("*.py")}


def _imports(module: str, *, top_level_only: bool = False) -> set[str]:
    """Modules `module` imports (relative imports resolved); TYPE_CHECKING blocks left out."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    package = module if MODULES[module].name == "__init__.py" else module.rsplit(".", 1)[0]
    out: set[str] = set()

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            nested = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.Import) and (top or not top_level_only):
                out.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom) and (top or not top_level_only):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join(anchor + ([base] if base else []))
                # `from . import trust` imports the submodule, not (only) the package.
                subs = {f"{base}.{a.name}" for a in child.names if f"{base}.{a.name}" in MODULES}
                out.update(subs)
                if len(subs) < len(child.names):
                    out.add(base)
            visit(child, top and not nested)

    visit(tree, True)
    return out


def _inside(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in prefixes)


def _ours(imports: set[str]) -> set[str]:
    return {i for i in imports if i.split(".")[0] == "mnemo_mcp"}


# Libraries the core may read pure data from (none now: Unicode's look-alike letters are
# generated into core/confusables.py). No I/O of the user's, no clock, no network.
CORE_DATA_LIBRARIES: set[str] = set()


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _inside(m, ("mnemo_mcp.core",))))
def test_core_imports_only_the_standard_library_and_itself(module):
    allowed = STDLIB | CORE_DATA_LIBRARIES
    outside = {i for i in _imports(module) if i.split(".")[0] not in allowed and not _inside(i, ("mnemo_mcp.core",))}
    assert not outside, outside


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _inside(m, ("mnemo_mcp.storage",))))
def test_storage_knows_no_service_and_no_interface(module):
    wrong = {
        i
        for i in _ours(_imports(module))
        if not _inside(i, ("mnemo_mcp.storage", "mnemo_mcp.core", "mnemo_mcp.errors"))
    }
    assert not wrong, wrong


@pytest.mark.parametrize(
    "module", sorted(m for m in MODULES if _inside(m, ("mnemo_mcp.service", *SHARED, "mnemo_mcp.embedding")))
)
def test_the_service_and_shared_modules_never_import_an_interface(module):
    wrong = {i for i in _ours(_imports(module)) if _inside(i, INTERFACES)}
    assert not wrong, wrong


@pytest.mark.parametrize(
    "module", sorted(m for m in MODULES if _inside(m, SHARED) and not _inside(m, ("mnemo_mcp.core",)))
)
def test_shared_modules_never_import_storage_or_the_service(module):
    wrong = {i for i in _ours(_imports(module)) if _inside(i, ("mnemo_mcp.storage", "mnemo_mcp.service"))}
    assert not wrong, wrong


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _inside(m, INTERFACES)))
def test_interfaces_reach_storage_only_through_the_service(module):
    wrong = {i for i in _ours(_imports(module)) if _inside(i, ("mnemo_mcp.storage",))}
    assert not wrong, wrong
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    private = [
        f"{ast.unparse(n)} (line {n.lineno})"
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and (n.attr in ("store", "conn") or (n.attr.startswith("_") and not n.attr.startswith("__")))
        and isinstance(n.value, ast.Name)
        and n.value.id in ("svc", "service")
    ]
    assert not private, private


def _find_cycle(graph: dict[str, set[str]]) -> list[str]:
    state: dict[str, int] = {}
    cycle: list[str] = []

    def dfs(node: str, path: list[str]) -> bool:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle.extend(path[path.index(nxt) :] + [node, nxt] if nxt in path else [node, nxt])
                return True
            if state.get(nxt) is None and dfs(nxt, path + [node]):
                return True
        state[node] = 2
        return False

    for m in sorted(graph):
        if state.get(m) is None and dfs(m, []):
            break
    return cycle


def test_no_module_level_import_cycle():
    graph = {m: {i for i in _ours(_imports(m, top_level_only=True)) if i in MODULES and i != m} for m in MODULES}
    cycle = _find_cycle(graph)
    assert not cycle, " -> ".join(cycle)


def test_no_import_cycle_even_through_imports_inside_functions():
    # A part that imports a peer's names inside a function to dodge a module-level cycle still
    # depends on it both ways: what two parts share belongs in a module both import.
    graph = {m: {i for i in _ours(_imports(m)) if i in MODULES and i != m} for m in MODULES}
    cycle = _find_cycle(graph)
    assert not cycle, " -> ".join(cycle)


def test_sql_lives_in_storage_only():
    keywords = ("SELECT ", "INSERT INTO", "UPDATE memories", "DELETE FROM", "CREATE TABLE", "CREATE INDEX")
    offenders = []
    for module, path in MODULES.items():
        if _inside(module, ("mnemo_mcp.storage",)):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and any(k in node.value for k in keywords)
            ):
                offenders.append(f"{module}:{node.lineno}")
    assert not offenders, offenders


def test_every_imported_package_is_a_declared_dependency():
    import re
    import tomllib
    from importlib.metadata import packages_distributions

    project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = {re.split(r"[<>=!~\[; ]", d, maxsplit=1)[0].lower().replace("_", "-") for d in project["dependencies"]}
    owners = packages_distributions()
    undeclared = {}
    for module in MODULES:
        for name in {i.split(".")[0] for i in _imports(module)} - STDLIB - {"mnemo_mcp"}:
            dists = {d.lower().replace("_", "-") for d in owners.get(name, [name])}
            if not dists & declared:
                undeclared.setdefault(name, set()).add(module)
    assert not undeclared, undeclared


@pytest.mark.parametrize("module", sorted(m for m in MODULES if _inside(m, ("mnemo_mcp.service",))))
def test_service_parts_are_composed_and_use_peers_only_through_public_methods(module):
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    inherited = [
        f"{c.name}({', '.join(ast.unparse(b) for b in c.bases)})"
        for c in tree.body
        if isinstance(c, ast.ClassDef) and any(ast.unparse(b) not in ("Part", "BaseModel") for b in c.bases)
    ]
    assert not inherited, f"parts are built from the context and their peers, not from each other: {inherited}"
    private = [
        f"{ast.unparse(n)} (line {n.lineno})"
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute)
        and n.attr.startswith("_")
        and not n.attr.startswith("__")
        and isinstance(n.value, ast.Attribute)
        and isinstance(n.value.value, ast.Name)
        and n.value.value.id == "self"
        and n.value.attr != "ctx"
    ]
    assert not private, private


def test_the_facade_takes_keyword_arguments_after_the_subject(hash_service):
    """A reordered parameter cannot miswire a caller: at most the subject is positional."""
    import inspect

    public = {n: v for n, v in vars(hash_service).items() if callable(v) and not n.startswith("_")}
    assert len(public) > 40
    positional = {
        name: names
        for name, fn in public.items()
        if len(
            names := [p.name for p in inspect.signature(fn).parameters.values() if p.kind is p.POSITIONAL_OR_KEYWORD]
        )
        > 1
    }
    assert not positional, positional


def _store_attributes_used_by_the_service() -> dict[str, set[str]]:
    """Attributes the service reaches on a store (`self.store.x`, `svc.store.x`, `st.x` with
    `st = self.store`), and on its transactions (`...store.db.x`), by module."""
    aliases = {"self.store", "svc.store", "st", "self.ctx.store"}
    used: dict[str, set[str]] = {}
    for module in (m for m in MODULES if _inside(m, ("mnemo_mcp.service",))):
        for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute):
                base = ast.unparse(node.value)
                if base in aliases:
                    used.setdefault(node.attr, set()).add(module)
                elif base.endswith(".db") and base[: -len(".db")] in aliases:
                    used.setdefault(f"db.{node.attr}", set()).add(module)
    return used


def test_the_service_reaches_storage_only_through_the_store_interface():
    from mnemo_mcp.storage.interface import MemoryStore, Transactions

    declared = {n for n in dir(MemoryStore) if not n.startswith("_")} | set(MemoryStore.__annotations__)
    declared |= {f"db.{n}" for n in dir(Transactions) if not n.startswith("_")} | {
        f"db.{n}" for n in Transactions.__annotations__
    }
    used = _store_attributes_used_by_the_service()
    assert "get" in used and "db.write" in used  # the walk finds what it should
    undeclared = {name: mods for name, mods in used.items() if name not in declared}
    assert not undeclared, f"declare these in storage/interface.py (a second backend needs them): {undeclared}"


def test_the_sqlite_store_implements_the_whole_interface():
    import inspect

    from mnemo_mcp.storage.db import Database
    from mnemo_mcp.storage.interface import MemoryStore, Transactions
    from mnemo_mcp.storage.store import Store

    for protocol, impl in ((MemoryStore, Store), (Transactions, Database)):
        for name, member in vars(protocol).items():
            if name.startswith("_") or not callable(member):
                continue
            assert hasattr(impl, name), f"{impl.__name__} lacks {name}"
            want = [p.name for p in inspect.signature(member).parameters.values()]
            have = [p.name for p in inspect.signature(getattr(impl, name)).parameters.values()]
            assert have == want, f"{impl.__name__}.{name}{have} differs from the interface's {want}"


BENCHMARKS = {p.stem: p for p in (PACKAGE.parent / "benchmarks").glob("*.py") if p.stem != "__init__"}
# Measures storage layouts themselves (quantized vec0 tables, rescoring from sqlite-vec's blobs):
# its SQL is the subject of the benchmark, not a way around the service.
STORAGE_EXPERIMENTS = {"vector_options"}


def test_benchmarks_import_each_other_without_a_cycle_or_private_helpers():
    graph: dict[str, set[str]] = {}
    borrowed = []
    for name, path in BENCHMARKS.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[name] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                graph[name].add(node.module.split(".")[0])
                borrowed += [f"{name} <- {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    assert not borrowed, borrowed

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in graph.get(start, ()))

    cyclic = sorted(n for n in graph if reaches(n, n, set()))
    assert not cyclic, cyclic


def test_benchmarks_run_no_sql_of_their_own():
    keywords = ("SELECT ", "INSERT INTO", "UPDATE ", "DELETE FROM", "CREATE TABLE")
    offenders = [
        f"{name}:{node.lineno}"
        for name, path in BENCHMARKS.items()
        if name not in STORAGE_EXPERIMENTS
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and any(k in node.value for k in keywords)
    ]
    assert not offenders, offenders


def test_the_readme_layout_names_every_module_and_folder():
    """The layout section is the map a newcomer reads first: a module it does not name is one it
    hides, and a name it keeps after a module is gone sends the reader to nothing."""
    readme = (PACKAGE.parent / "README.md").read_text(encoding="utf-8")
    layout = readme.split("## Layout", 1)[1].split("```")[1]
    words = set(re.findall(r"[A-Za-z_][\w]*", layout))
    missing = [
        str(p.relative_to(PACKAGE.parent))
        for p in PACKAGE.rglob("*.py")
        if p.stem not in ("__init__", "__main__") and p.stem not in words
    ]
    assert not missing, f"modules the README's layout does not name: {missing}"
    folders = re.findall(r"^((?:mnemo_mcp|benchmarks|tests)/[\w/]*?)(?:\.py)?\s", layout, flags=re.M)
    gone = [f for f in folders if not (PACKAGE.parent / f).exists() and not (PACKAGE.parent / f"{f}.py").exists()]
    assert not gone, f"paths in the README's layout that do not exist: {gone}"


def test_package_and_benchmark_functions_and_modules_stay_small():
    """Split a function before ~80 lines and a module before ~600: past that, a reader cannot
    hold it at once, and a change in one half breaks the other half unseen."""
    too_long = []
    for path in [*PACKAGE.rglob("*.py"), *(PACKAGE.parent / "benchmarks").rglob("*.py")]:
        source = path.read_text(encoding="utf-8")
        name = str(path.relative_to(PACKAGE.parent))
        if len(source.splitlines()) > 600:
            too_long.append(f"{name}: {len(source.splitlines())} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > 80:
                    too_long.append(f"{name}: {node.name} {lines} lines")
    assert not too_long, too_long
