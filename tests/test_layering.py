"""The house rules of ARCHITECTURE.md, checked on the source: figures.py never imports torch, and nothing below
app.py imports gradio."""

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "bertviz_app"


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_figures_does_not_import_torch():
    assert "torch" not in imported_modules(PACKAGE / "figures.py")


def test_analysis_does_not_import_plotting_or_gradio():
    for path in (PACKAGE / "analysis").glob("*.py"):
        assert not imported_modules(path) & {"gradio", "plotly"}, path.name


def test_nothing_below_app_imports_gradio():
    ui = {"app.py", "cli.py", "__main__.py"}  # the UI layer and the entry points that launch it
    checked = [p for p in PACKAGE.rglob("*.py") if not (p.parent == PACKAGE and p.name in ui)]
    assert PACKAGE / "figures.py" in checked and PACKAGE / "explorer.py" in checked
    offenders = [str(p.relative_to(PACKAGE)) for p in checked if "gradio" in imported_modules(p)]
    assert not offenders


def test_the_checker_sees_imports(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("import torch.nn as nn\nfrom gradio import Blocks\nfrom . import sibling\n")
    assert imported_modules(sample) == {"torch", "gradio"}
