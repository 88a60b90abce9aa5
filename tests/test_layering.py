"""The house rules, checked on the source: imports point down the floors below (no circle, not even through an
import inside a function), nothing below app/ imports gradio, figures/ never imports torch, analysis/ is numbers
only. Every import statement is read, wherever it stands; a module missing from FLOORS fails the test, so the map
stays current (docs/ARCHITECTURE.md draws the same floors)."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "bertviz_app"

# Module (or subpackage) -> floor. An import must point to a strictly lower floor, or stay inside its own subpackage.
FLOORS = {
    "files": 0,  # the capped reader of a checkpoint folder's small files
    "limits": 0,  # the served app's default bounds (no imports)
    "family": 0,  # the BERT family's checkpoint key names and notes in words (stdlib only)
    "batching": 0,  # inputs that arrive together, run as one pass (stdlib only)
    "inputs": 0,  # the one check of an input's text, for the explorer and the app (stdlib only)
    "heads": 0,  # the vocabulary of heads: statistics, the role rule, labels and colours (numpy only)
    "styles": 0,  # every page's CSS, one source: the .css files and their names (stdlib only)
    "i18n": 0,  # the catalogue of user-facing strings (views/js/catalog-es.mjs) read as JSON, and the language chosen
    "config": 1, "device": 1, "catalog": 1,
    "padding": 1,  # inputs of several lengths as one batch (torch only)
    "spare_cores": 1,  # a long analysis's independent batches on the cores torch leaves idle (torch only)
    "finetuned": 1,  # what a fine-tuned folder records (base model, held-out predictions): files only
    "model": 2, "tokenizer": 2,
    "checkpoint": 3, "masking": 3,
    "serving": 3,  # the pass of new inputs (TorchScript), beside the model, not inside it
    "analysis": 4, "figures": 4,
    "probing": 4,  # the one linear probe of hidden states (torch's L-BFGS), for a corpus and a timeline
    "settings": 0,  # a run's settings as one dataclass: checks, argparse and metrics.json from its fields
    "training": 4,  # the one training loop that pretraining and fine-tuning share
    "run_settings": 5,  # the settings every run and every training shares, which each kind's settings extend
    "views": 5,  # views reads the analyses of a Run's arrays (rollout, statistics)
    "run": 6,  # numbers only: no plotting below it
    "plots": 7,  # run.plot, above the Run it draws
    "static": 6,  # the page that runs the model itself: ONNX export, runtime, the views beside it
    "masked_lm": 7,
    "targets": 8,  # the one number an attribution or an ablation explains
    "timeline": 8,  # a training's snapshots: written by the loop's callers, read by the app and a notebook
    "attribution": 9, "ablation": 9,
    "contrast": 9.5,  # why answer A and not B: attribution.py's methods on a logit difference
    "curves": 9.5,  # deletion and insertion curves of every attribution method, attention to blank-out
    "causal": 9,  # patching, value zeroing, attention flow: the model again, through its named points
    "finetuning": 9,  # below explorer, whose predict() gives a fine-tuned head's answer
    "explorer": 10, "pretraining": 10,
    "corpus": 11,  # many sentences through the explorer's model, and the questions asked of them
    "lessons": 2,  # the shipped lessons (read by the app and the static page), their facts checked with any explorer
    "__init__": 12,  # the package face: what `import bertviz_app` gives
    "app": 13,
    "space": 13,  # export-space: the package, its models and an app.py that serves through cli
    "cli": 14, "__main__": 15,
}

# Inside app/ (floor 13), the same rule one level down, by module or subpackage: the serving side knows nothing of the
# page, a tab nothing of the layout that lists it (so adding a tab touches tabs/ alone).
APP_FLOORS = {
    "server": 0,  # launch, guards, gradio's internals
    "lane": 0,  # the one training lane and its jobs
    "common": 1,  # what every part of the page shares: models, session, checks, errors in words
    "views_host": 2,  # our attention views inside the page
    "attention": 3, "tabs": 3,  # the views under the input; the tabs, one module each, and their protocol
    "layout": 4,  # the page: the input, then every tab of tabs.TABS
    "__init__": 5,
}


def unit_of(path: Path) -> str:
    """'app' for bertviz_app/app/layout.py, 'run' for bertviz_app/run.py."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def imports_of(path: Path) -> list[tuple[str, int]]:
    """(absolute module name, line) of every import in the file, top level or inside a function."""
    package = ".".join(("bertviz_app", *path.relative_to(PACKAGE).parent.parts))
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: `..run` from bertviz_app/app/ is bertviz_app.run
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([module] if module else []))
            # `from . import analysis` imports a module, `from .run import Run` a name: keep both spellings as
            # module.name, and let the reader trim it to the longest prefix that is a module
            found += [(f"{module}.{alias.name}", node.lineno) for alias in node.names]
    return found


def sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def internal_edges() -> list[tuple[str, str, str]]:
    """(from unit, to unit, 'file:line') for every import of one bertviz_app unit by another."""
    edges = []
    for path in sources():
        here = unit_of(path)
        for module, line in imports_of(path):
            parts = module.split(".")
            if parts[0] != "bertviz_app":
                continue
            target = parts[1] if len(parts) > 1 else "__init__"
            if target == "__version__":
                target = "__init__"
            if target != here:
                edges.append((here, target, f"{path.relative_to(PACKAGE)}:{line}"))
    return edges


def external(path: Path) -> set[str]:
    return {module.split(".")[0] for module, _ in imports_of(path)}


def test_every_module_has_a_floor():
    units = {unit_of(p) for p in sources()}
    assert not units - set(FLOORS), f"add these to FLOORS (and to docs/ARCHITECTURE.md): {units - set(FLOORS)}"


def test_imports_only_point_down():
    upward = [f"{where}: {a} (floor {FLOORS[a]}) imports {b} (floor {FLOORS.get(b)})"
              for a, b, where in internal_edges() if FLOORS.get(b, 99) >= FLOORS[a]]
    assert not upward, "\n".join(upward)


def app_edges() -> list[tuple[str, str, str]]:
    """(from, to, 'file:line') for every import of one part of app/ (a module or a subpackage) by another."""
    edges = []
    for path in sorted((PACKAGE / "app").rglob("*.py")):
        here = path.relative_to(PACKAGE / "app").with_suffix("").parts[0]
        for module, line in imports_of(path):
            parts = module.split(".")
            if parts[:2] == ["bertviz_app", "app"]:
                target = parts[2] if len(parts) > 2 else "__init__"
                if target != here:
                    edges.append((here, target, f"{path.relative_to(PACKAGE)}:{line}"))
    return edges


def test_inside_app_imports_point_down_too():
    parts = {path.relative_to(PACKAGE / "app").with_suffix("").parts[0] for path in (PACKAGE / "app").rglob("*.py")}
    assert parts <= set(APP_FLOORS), f"add these to APP_FLOORS (and docs/ARCHITECTURE.md): {parts - set(APP_FLOORS)}"
    upward = [f"{where}: {a} (app floor {APP_FLOORS[a]}) imports {b} (app floor {APP_FLOORS.get(b)})"
              for a, b, where in app_edges() if APP_FLOORS.get(b, 99) >= APP_FLOORS[a]]
    assert any(b == "server" for _, b, _ in app_edges()) and not upward, "\n".join(upward)


def test_no_import_circle_between_modules():
    """Module by module (app/layout.py and app/attention.py count apart), so a circle inside a subpackage is found
    too."""
    graph: dict[str, set[str]] = {}
    for path in sources():
        name = ".".join(("bertviz_app", *path.relative_to(PACKAGE).with_suffix("").parts)).removesuffix(".__init__")
        graph.setdefault(name, set())
        for module, _ in imports_of(path):
            if module.startswith("bertviz_app"):
                graph[name].add(module)
    modules = set(graph)

    def resolve(module: str) -> str | None:  # 'bertviz_app.figures.save_html' -> 'bertviz_app.figures'
        while module and module not in modules:
            module = module.rpartition(".")[0]
        return module or None

    edges = {m: {t for t in map(resolve, targets) if t and t != m} for m, targets in graph.items()}
    state: dict[str, int] = {}
    cycles = []

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt] if nxt in stack else [node, nxt])
            elif nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    assert not cycles, cycles


@pytest.mark.parametrize("unit, forbidden", [("figures", {"torch", "gradio"}), ("analysis", {"torch", "gradio",
                                                                                            "plotly"}),
                                             ("views", {"torch", "gradio", "plotly", "pandas"})])
def test_pictures_and_numbers_stay_light(unit, forbidden):
    offenders = {str(p.relative_to(PACKAGE)): external(p) & forbidden for p in (PACKAGE / unit).rglob("*.py")
                 if external(p) & forbidden}
    assert not offenders


def test_nothing_below_app_imports_gradio():
    ui = {"app", "cli", "__main__"}  # the UI layer and the entry points that launch it
    checked = [p for p in sources() if unit_of(p) not in ui]
    assert any(unit_of(p) == "explorer" for p in checked) and any(unit_of(p) == "figures" for p in checked)
    offenders = [str(p.relative_to(PACKAGE)) for p in checked if "gradio" in external(p)]
    assert not offenders


def test_the_checker_sees_every_import(tmp_path, monkeypatch):
    package = tmp_path / "bertviz_app"
    (package / "app").mkdir(parents=True)
    sample = package / "app" / "m.py"
    sample.write_text("import torch.nn as nn\nfrom gradio import Blocks\nfrom . import sibling\n"
                      "from ..run import Run\n\ndef later():\n    from .. import explorer\n")
    monkeypatch.setattr(__import__(__name__), "PACKAGE", package)
    assert external(sample) == {"torch", "gradio", "bertviz_app"}
    assert {m for m, _ in imports_of(sample)} == {"torch.nn", "gradio.Blocks", "bertviz_app.app.sibling",
                                                  "bertviz_app.run.Run", "bertviz_app.explorer"}


def test_a_run_holds_numbers_and_imports_no_plotting():
    """A Run (and the package face) import neither plotly nor gradio: pictures come with the first `run.plot`."""
    code = ("import sys, bertviz_app, bertviz_app.run, bertviz_app.explorer\n"
            "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('plotly', 'gradio'))\n"
            "assert not heavy, heavy\n"
            "assert not hasattr(bertviz_app.run.Run, 'plot')\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=PACKAGE.parent, timeout=120)


def test_the_architecture_page_draws_the_same_floors():
    """docs/ARCHITECTURE.md's module table gives every unit the floor FLOORS gives it, and no other unit; and every part
    of app/ the floor APP_FLOORS gives it."""
    page = (PACKAGE.parent / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    drawn = {}
    # a half floor (9.5) sits between two; app/'s own rows (13.0, 13.1, ...) name paths inside app/, read below
    for floor, modules in re.findall(r"^\| (\d+(?:\.5)?) \| ([^|]+) \|", page, flags=re.MULTILINE):
        for name in re.findall(r"`([\w/.]+)`", modules):
            if "/" not in name.rstrip("/"):
                drawn[name.removesuffix(".py").rstrip("/")] = float(floor)
    assert drawn == FLOORS
    # app/'s own floors, drawn as 13.0, 13.1, ...
    inside = {}
    for floor, modules in re.findall(r"^\| 13\.(\d+) \| ([^|]+) \|", page, flags=re.MULTILINE):
        for name in re.findall(r"`app/([\w/.]+)`", modules):
            inside[name.removesuffix(".py").rstrip("/")] = int(floor)
    assert inside == APP_FLOORS


def test_every_module_stays_small_enough_to_read():
    """No function over 80 lines and no file over 650, anywhere in the package: the page is a loop over its tabs, a
    training one settings object and a loop, the model a file that reads top to bottom (tests/js/size.test.mjs holds
    the JavaScript to 120 lines a function)."""
    too_long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if len(source.splitlines()) > 650:
            too_long.append(f"{path.relative_to(PACKAGE)}: {len(source.splitlines())} lines")
        too_long += [f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}: {node.end_lineno - node.lineno + 1} lines"
                     for node in ast.walk(ast.parse(source))
                     if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and node.end_lineno - node.lineno + 1 > 80]
    assert any((PACKAGE / "app").rglob("layout.py")) and not too_long, too_long
