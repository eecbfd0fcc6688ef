"""The package's import graph, read from the source with `ast` (module-level and function-level
imports alike): no circles, and no arrows up into the command line or experiments' private
helpers (~0.3 s)."""
import ast
from pathlib import Path

import inertia

ROOT = Path(inertia.__file__).parent


def _modules() -> dict:
    """module name -> (path, is package)."""
    out = {}
    for p in ROOT.rglob("*.py"):
        parts = list(p.relative_to(ROOT.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_pkg else parts)] = (p, is_pkg)
    return out


def _known(name: str, mods: dict):
    """The module `name` names, or the module an attribute `name` lives in."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict:
    """module -> set of inertia modules it imports (anywhere in its source)."""
    mods = _modules()
    graph = {}
    for mod, (path, is_pkg) in mods.items():
        out = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                out.update(_known(a.name, mods) for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    base = base[:len(base) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for a in node.names:
                    out.add(_known(f"{target}.{a.name}", mods))
        graph[mod] = {m for m in out if m and m != mod and m.startswith("inertia")}
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
                on.discard(comp[-1])
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_graph_sees_imports_of_every_kind():
    g = import_graph()
    assert "inertia.convergence" in g["inertia.sgmcmc.stream"]       # from .. import convergence
    assert "inertia.mcmc.kernels" in g["inertia.mcmc.sample"]        # from .kernels import ...
    assert "inertia.verdict" in g["inertia.results.store"]           # a function-level import
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles():
    assert cycles(import_graph()) == []


def test_no_upward_arrows():
    """Only the entry point imports the command line; only experiments import their private
    helpers."""
    bad = []
    for mod, deps in import_graph().items():
        for dep in deps:
            in_cli = dep == "inertia.cli" or dep.startswith("inertia.cli.")
            if in_cli and mod != "inertia.__main__" and not mod.startswith("inertia.cli"):
                bad.append((mod, dep))
            private = dep.startswith("reproductions.") and \
                dep.rpartition(".")[2].startswith("_")
            if private and not mod.startswith("reproductions"):
                bad.append((mod, dep))
    assert bad == []


def test_the_command_line_is_one_package():
    """Each command is a module of `inertia.cli`; no subpackage keeps a command line of its own."""
    mods = import_graph()
    assert {"inertia.cli.fit", "inertia.cli.sample", "inertia.cli.calibrate",
            "inertia.cli.reproduce"} <= set(mods)
    assert [m for m in mods if m.endswith(".cli") and m != "inertia.cli"] == []


def test_the_tier_policy_imports_nothing_of_inertia():
    """The compile-tier policy takes cost numbers: it reads no target, result or driver."""
    assert import_graph()["inertia._tiers"] == set()
    source = (ROOT / "_tiers.py").read_text()
    assert "import jax" not in source


def _function(path: Path, name: str) -> ast.FunctionDef:
    return next(n for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.FunctionDef)
                and n.name == name)


def test_the_sampler_has_no_kernel_branches():
    """`sample` runs whichever warm-up the kernel's registry entry names: sample.py never asks
    whether a kernel is adjusted or whether its parameters were tuned."""
    tree = ast.parse((ROOT / "mcmc" / "sample.py").read_text())
    asked = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    named = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert not asked & {"adjusted", "tuned", "transition"}
    assert not named & {"auto", "automatic", "adjusted"}
    from inertia.mcmc.adaptation import SCHEMES
    from inertia.mcmc.kernels import REGISTRY

    assert {m.warmup for m in REGISTRY.values()} <= set(SCHEMES)


def test_drivers_read_at_once():
    """The public drivers are short enough to read at once (body lines, docstring excluded)."""
    for path, name, limit in ((ROOT / "mcmc" / "sample.py", "sample", 40),
                              (ROOT / "variational" / "fit.py", "fit", 75),
                              (ROOT / "sgmcmc" / "calibrate.py", "calibrate", 45)):
        fn = _function(path, name)
        body = fn.body[1:] if isinstance(fn.body[0], ast.Expr) else fn.body
        assert body[-1].end_lineno - body[0].lineno + 1 <= limit, name


def test_the_library_does_not_import_the_reproductions():
    """The paper reproductions live beside the package (reproductions/); only `inertia reproduce`
    loads them, from a checkout, by path."""
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else []
            assert not any(n.split(".")[0] == "reproductions" for n in names), path


# the declared layers (lower first); a module may import its own layer and those below it. The
# Gaussian fit (`variational`) sits below the drivers that use it (the sampler's warm-up); `vi` is
# the public namespace of the fit with its workflows (`vi.fit` escalates to the sampler)
LAYERS = ({"data"}, {"targets"},
          {"diagnostics", "results", "convergence", "verdict", "arviz_io", "plots"},
          {"variational"}, {"mcmc", "sgmcmc"}, {"workflows", "vi"}, {"cli", "__main__"})
DRIVERS = {"mcmc", "sgmcmc"}


def _layer(module: str):
    part = module.split(".")[1] if module.count(".") else "inertia"
    for i, names in enumerate(LAYERS):
        if part in names:
            return i, part
    return None, part  # the package's own helpers (inertia._*, linalg, ...): below every layer


def test_the_layers_hold_counting_function_level_imports():
    """targets < diagnostics/results < the Gaussian fit (variational) < the drivers (mcmc, sgmcmc) <
    workflows and the public vi < cli: no module imports a higher layer, nor a driver another driver,
    anywhere in its source."""
    bad = set()
    for mod, deps in import_graph().items():
        lm, pm = _layer(mod)
        if mod == "inertia":  # the package's namespace gathers every layer
            continue
        for dep in deps:
            ld, pd = _layer(dep)
            if pd == pm or ld is None:
                continue
            if lm is None or ld > lm or (ld == lm and LAYERS[ld] == DRIVERS):
                bad.add((mod, dep))
    assert bad == set()


def test_no_cycle_among_subpackages():
    """The subpackages' graph (every import, function-level ones too) has no cycle."""
    sub = {}
    for mod, deps in import_graph().items():
        for dep in deps:
            a, b = _layer(mod)[1], _layer(dep)[1]
            sub.setdefault(a, set())
            sub.setdefault(b, set())
            if a != b:
                sub[a].add(b)
    assert cycles(sub) == []
