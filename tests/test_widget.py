"""run.widget(): the attention views as an anywidget whose layer, head, token and view are synced both ways.

In plain Python: the state anywidget sends a front end, the messages a trait set sends, a front end's update arriving
as the kernel receives it, the checks of each trait, and the sentence when anywidget is missing. In a real
JupyterLab driven by Chromium: a click in the widget's output reaches the kernel, and a cell's `w.layer = ...` moves
the picture."""

from __future__ import annotations

import importlib
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

import bertviz_app
from bertviz_app.views import widget as widget_module

ROOT = Path(__file__).resolve().parents[1]
traitlets = pytest.importorskip("traitlets", reason="the test extra installs anywidget, which brings traitlets")


@pytest.fixture(scope="module")
def run(tiny_mlm_folder):
    return bertviz_app.load(tiny_mlm_folder, device="cpu").run("The cat sat on the mat.")


def record_sent(w) -> list[dict]:
    """What the widget sends its front end from now on (its comm without a kernel sends nowhere)."""
    sent: list[dict] = []
    w.comm.send = lambda data=None, buffers=None, **_: sent.append(data)
    return sent


def front_end_update(w, **state) -> None:
    """What the kernel does with a front end's update message (a click in the views)."""
    w._handle_msg({"content": {"data": {"method": "update", "state": state, "buffer_paths": []}}, "buffers": []})


def test_the_widget_carries_the_views_and_syncs_layer_head_token_and_view_both_ways(run):
    w = run.widget(view="overview")
    state = w.get_state()
    # what the front end gets: the same payload and query/key blob as run.show(), the host's ESM, the traits
    assert state["_payload"] == run.views_payload() and state["_query_key"] == run.query_key_payload()
    assert "startWidgetHost" in state["_esm"] and "export default" in state["_esm"]
    # one drawing path: show()'s bundle, and the widget's host beside it
    assert bertviz_app.views.bundle_js("widget").startswith(bertviz_app.views.bundle_js("page").split("// ---- ")[0])
    assert "// ---- main.mjs" in state["_esm"] and "// ---- widget-host.mjs" in state["_esm"]
    assert {k: state[k] for k in ("layer", "head", "token", "view")} == {"layer": None, "head": None,
                                                                        "token": None, "view": "overview"}
    sent = record_sent(w)
    seen = []
    w.observe(lambda change: seen.append((change["name"], change["new"])), names=["layer", "head", "token", "view"])

    # Python -> front end: each set is one update message naming that trait
    w.layer = 1
    w.head = "all"
    w.token = 4
    updates = [m["state"] for m in sent if m["method"] == "update"]
    assert updates == [{"layer": 1}, {"head": "all"}, {"token": 4}]

    # front end -> Python: a click on a tile of the overview sends layer, head and view in one update
    front_end_update(w, layer=0, head=2, token=None, view="lines")
    assert (w.layer, w.head, w.token, w.view) == (0, 2, None, "lines")
    assert ("layer", 0) in seen and ("head", 2) in seen and ("token", None) in seen and ("view", "lines") in seen
    # the values that came from the front end are not sent back to it as new updates
    assert [m["state"] for m in sent if m["method"] == "update"] == updates
    assert "layer=0 head=2" in repr(w)


@pytest.mark.parametrize("trait, value, words", [
    ("layer", 2, "layer must be from 0 to 1 (this model has 2 layers), not 2"),
    ("layer", -1, "layer must be from 0 to 1"),
    ("head", 4, "head must be from 0 to 3 (this model has 4 heads), not 4"),
    ("head", "some", "head must be a number or 'all'"),
    ("token", 9, "token must be from 0 to 8 (this input has 9 tokens), not 9"),
    ("view", "qk", "unknown view 'qk'; choose one of lines, matrix, overview, query_key"),
])
def test_each_trait_refuses_what_the_views_cannot_show_in_a_sentence(run, trait, value, words):
    w = run.widget(layer=1, head=3, token=8, view="query_key")  # the last of each is fine
    with pytest.raises(traitlets.TraitError, match=words.replace("(", r"\(").replace(")", r"\)")):
        setattr(w, trait, value)
    with pytest.raises(traitlets.TraitError, match=words.split(" (")[0]):
        run.widget(**{trait: value})


def test_without_anywidget_the_package_imports_and_widget_names_the_extra(run, monkeypatch):
    monkeypatch.setitem(sys.modules, "anywidget", None)  # an import of it raises ImportError
    monkeypatch.delitem(sys.modules, "bertviz_app.views.widget")
    try:
        fresh = importlib.import_module("bertviz_app.views.widget")  # anywidget is not needed to import it
        with pytest.raises(ImportError, match=r"needs anywidget.*: pip install bertviz-app\[notebook\]$"):
            run.widget()
        assert run.show()._repr_html_().startswith("<div")  # show() needs no widget library
    finally:
        fresh.widget_class.cache_clear()
        widget_module.widget_class.cache_clear()


# --- in JupyterLab ---------------------------------------------------------------------------------------------------

LAB_TIMEOUT_S = 90  # each wait: a server, a page or a kernel starting on two loaded cores; never the normal time


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def jupyterlab(tmp_path):
    """A JupyterLab server of this venv on a free port, its configuration, runtime files and workspaces under
    tmp_path (the user's own stay untouched), the news pop-up off (it could cover what the test clicks); yields
    (base url, token, root folder)."""
    pytest.importorskip("jupyterlab", reason="the test extra installs jupyterlab")
    root, config = tmp_path / "root", tmp_path / "config"
    root.mkdir()
    (config / "labconfig").mkdir(parents=True)
    (config / "labconfig" / "page_config.json").write_text(json.dumps(
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}}))
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(config), "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    log = (tmp_path / "jupyterlab.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
         "--ServerApp.port_retries=0", f"--ServerApp.token={token}", f"--ServerApp.root_dir={root}",
         f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}",
         "--LabApp.expose_app_in_browser=True"],  # window.jupyterapp: run a cell as its menu does, read its outputs
        env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + LAB_TIMEOUT_S
        while True:
            if server.poll() is not None:
                pytest.fail(f"jupyter lab exited ({server.returncode}): {(tmp_path / 'jupyterlab.log').read_text()}")
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"jupyter lab did not answer: {(tmp_path / 'jupyterlab.log').read_text()}")
                time.sleep(0.2)
        yield base, token, root
    finally:
        server.terminate()
        try:
            server.wait(20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


class Lab:
    """One notebook open in JupyterLab: run a cell as the Run menu does, read its outputs from the notebook's model."""

    def __init__(self, page):
        self.page = page

    def run_cell(self, index: int) -> str:
        """Run cell `index` and wait for it to finish; its outputs as text (streams, results, errors)."""
        self.page.evaluate("""async (i) => {
            const panel = window.jupyterapp.shell.currentWidget;
            panel.content.activeCellIndex = i;
            await window.jupyterapp.commands.execute('notebook:run-cell');
        }""", index)
        outputs = self.page.evaluate("""(i) => window.jupyterapp.shell.currentWidget.content.widgets[i].model
            .outputs.toJSON()""", index)
        return "\n".join(_output_text(o) for o in outputs)


def _output_text(output: dict) -> str:
    if output["output_type"] == "stream":
        return "".join(output["text"])
    if output["output_type"] == "error":
        return f"{output['ename']}: {output['evalue']}"
    data = output.get("data", {})
    return "".join(data.get("text/plain", "")) + json.dumps(data.get("application/vnd.jupyter.widget-view+json", ""))


def _state(text: str) -> tuple:
    """('lines', 1, 3, 4) from a cell's "STATE lines 1 3 4"."""
    found = re.search(r"STATE (\w+) (\S+) (\S+) (\S+)", text)
    assert found, text
    view, *numbers = found.groups()
    return (view, *[None if n == "None" else n if n == "all" else int(n) for n in numbers])


@pytest.mark.browser
@pytest.mark.slow  # a JupyterLab server, its page and a kernel that imports torch: ~30 s with its fixtures
def test_in_jupyterlab_a_click_reaches_the_kernel_and_a_cell_moves_the_picture(browser, jupyterlab,
                                                                               tiny_mlm_folder, tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="the test extra installs nbformat")
    base, token, root = jupyterlab
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(f"import sys; sys.path.insert(0, {str(ROOT)!r})\n"
                                  "import bertviz_app\n"
                                  f"run = bertviz_app.load({tiny_mlm_folder!r}, device='cpu')"
                                  ".run('The cat sat on the mat.')\n"
                                  "w = run.widget(view='overview')\nw"),
        nbformat.v4.new_code_cell("print('STATE', w.view, w.layer, w.head, w.token)"),
        nbformat.v4.new_code_cell("w.layer = 1 - w.layer\nprint('STATE', w.view, w.layer, w.head, w.token)"),
    ], metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    nbformat.write(notebook, root / "widget.ipynb")
    page = browser.new_page()
    page.set_default_timeout(LAB_TIMEOUT_S * 1000)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    lab = Lab(page)
    output = ".jp-OutputArea"
    try:
        page.goto(f"{base}/lab/tree/widget.ipynb?token={token}&reset")
        page.wait_for_function("() => window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel")
        page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.ready")
        shown = lab.run_cell(0)
        assert "model_id" in shown, shown  # the widget, not an error or only a text repr
        overview = page.locator(f"{output} [id$='view-pane-overview'] .bv-view[data-drawn]")
        overview.wait_for()
        # the views opened on a head worth a look and told the kernel which
        opened = (int(page.input_value(f"{output} [id$='view-layer']")),
                  int(page.input_value(f"{output} [id$='view-head']")))
        assert _state(lab.run_cell(1)) == ("overview", *opened, None)

        # a click on another head's tile opens it in the lines view; a click on a token's label selects it
        layer, head = (1, 3) if opened != (1, 3) else (0, 1)
        scroller = page.locator(f"{output} [id$='view-pane-overview'] .bv-scroller")
        scroller.scroll_into_view_if_needed()
        g = json.loads(scroller.get_attribute("data-geometry"))
        scroller.click(position={"x": g["left"] + head * (g["tile"] + g["gap"]) + g["tile"] / 2,
                                 "y": g["top"] + layer * g["rowPitch"] + g["tile"] / 2})
        lines = page.locator(f"{output} [id$='view-pane-lines'] .bv-view")
        _wait_drawn(page, lines, f"layer={layer} head={head}")
        scroller = page.locator(f"{output} [id$='view-pane-lines'] .bv-scroller")
        scroller.scroll_into_view_if_needed()
        g = json.loads(scroller.get_attribute("data-geometry"))
        scroller.click(position={"x": g["left"] - 30, "y": g["top"] + 4.5 * g["pitch"]})  # token 4, left column
        _wait_drawn(page, lines, "token=4")
        assert _state(lab.run_cell(1)) == ("lines", layer, head, 4)

        # a cell sets the layer: the picture moves there
        assert _state(lab.run_cell(2)) == ("lines", 1 - layer, head, 4)
        _wait_drawn(page, lines, f"layer={1 - layer} head={head} token=4")
        assert page.input_value(f"{output} [id$='view-layer']") == str(1 - layer)
        assert errors == []
        page.screenshot(path=str(tmp_path / "widget.png"))
    finally:
        page.close()


def _wait_drawn(page, view, contains: str) -> None:
    page.wait_for_function("([e, s]) => (e.dataset.drawn || '').includes(s)", arg=[view.element_handle(), contains])
