"""The Fine-tune tab in a real browser (Debian's headless Chromium through playwright): a short training started
from the tab draws its loss curve and epoch table, and the new model joins the model list, where picking it
analyzes with it at once. Screenshots go to tmp_path and, with BERTVIZ_SCREENSHOTS=DIR, to DIR (app_finetune_*.png)."""

from __future__ import annotations

import csv

import pytest

from bertviz_app import app
from bertviz_app.app.lane.training import TrainingSettings
from pages import TIMEOUT_MS, AppPage, serving, shoot

pytestmark = [pytest.mark.browser]


@pytest.fixture(scope="module")
def server(tiny_mlm_folder, tmp_path_factory):
    folder = tmp_path_factory.mktemp("finetune-data")
    with (folder / "reviews.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        writer.writerows([("a good film", "positive"), ("a bad film", "negative")] * 40)
    with serving(app.load_models([tiny_mlm_folder], device="cpu"),
                 training=TrainingSettings(True, "", (str(folder / "reviews.csv"),))) as served:
        yield served.url


def test_a_training_started_from_the_tab_draws_its_curve_and_joins_the_model_list(browser, server, tmp_path,
                                                                                    monkeypatch):
    monkeypatch.setenv("BERTVIZ_APP_CACHE", str(tmp_path / "cache"))
    v = AppPage(browser, server)
    v.views_drawn()
    v.open_tab("Fine-tune")
    page = v.page
    assert "reviews.csv" in page.locator("#finetune-data input").input_value()
    page.click("#finetune-start")
    page.wait_for_function("() => document.querySelector('#finetune-status')?.innerText.includes('joined the model "
                           "list')", timeout=TIMEOUT_MS * 2)
    # the Markdown's own text: gradio's status tracker may show a poll's timer ("0.0s") beside it for a moment
    status = page.locator("#finetune-status [data-testid=markdown]").inner_text()
    name = status.split(" (from ")[0].strip()
    assert name.startswith("reviews.csv fine-tuned"), status
    # the curve: plotly drew one trace point per step (72 sentences in batches of 32: 3 steps)
    points = page.wait_for_function("() => { const p = document.querySelector('#finetune-curve .js-plotly-plot');"
                                    " return p && p.calcdata && p.calcdata[0].length; }").json_value()
    assert points == 3
    assert "before training" in page.locator("#finetune-epochs-table").inner_text()
    # every header of the finished table inside the table's box (the last one was cut at the right edge)
    page.locator("#finetune-epochs-table").scroll_into_view_if_needed()
    cut = page.evaluate("""() => {
        const box = document.querySelector('#finetune-epochs-table').getBoundingClientRect();
        return [...document.querySelectorAll('#finetune-epochs-table th')].filter(th => th.innerText.trim())
            .map(th => [th.innerText.trim(), th.getBoundingClientRect()])
            .filter(([, r]) => r.right > box.right + 0.5 || r.left < box.left - 0.5).map(([t]) => t);
    }""")
    headers = page.locator("#finetune-epochs-table th").all_inner_texts()
    assert any("accuracy" in h for h in headers) and cut == [], (headers, cut)
    # the classifier's per-class table and confusion matrix, and the try box on the new model
    assert "precision" in page.locator("#finetune-classes-table").inner_text()
    page.wait_for_function("() => document.querySelector('#finetune-confusion .js-plotly-plot')?.calcdata")
    page.fill("#finetune-try-text textarea", "a good film")
    page.click("#finetune-try-button")
    page.wait_for_function("n => document.querySelector('#finetune-try-out')?.innerText.includes('according to ' + n)",
                           arg=name)
    page.fill("#finetune-try-text textarea", "")
    page.click("#finetune-try-button")
    page.wait_for_function("() => document.querySelector('#finetune-try-out')?.innerText.includes('Type a sentence "
                           "first')")
    # the refusal is said in place: no red "Error" pill over the answer
    assert page.locator("#finetune-try-out .error, #finetune-try-out [class*=error]").count() == 0
    assert "Error" not in page.locator("#finetune-try-out").inner_text()
    shoot(page, tmp_path, "finetune_done")
    assert _wider_than_their_box(page) == []
    with v.on_a_phone():
        page.wait_for_timeout(500)  # plotly and the table lay out again at the new width
        page.locator("#finetune-status").scroll_into_view_if_needed()
        assert page.locator("#finetune-confusion .js-plotly-plot").is_visible()
        assert page.locator("#finetune-try-button").is_visible()
        shoot(page, tmp_path, "finetune_done_phone", full_page=True)
        # the plots and the try box fit; the epochs' table still does not (issue #30, left open: gradio sets each
        # column's width inline from the desktop's layout)
        assert [w for w in _wider_than_their_box(page) if w[0] != "finetune-epochs-table"] == []
    page.locator("#model input").click()
    page.get_by_role("option", name=name).click()
    v.views_drawn()
    v.open_tab("Task")
    page.wait_for_function("n => document.querySelector('#task')?.innerText.includes('according to ' + n)", arg=name)
    assert not v.errors


def _wider_than_their_box(page) -> list:
    """The finished tab's parts that reach past their own box, or past the window, each as (id, what): the tables'
    cells (a phone scrolled the epochs' table sideways with its accuracy off the edge) and the plots (the loss curve
    was cut on the right)."""
    return page.evaluate("""() => {
        const out = [], edge = document.documentElement.clientWidth;
        for (const id of ['finetune-epochs-table', 'finetune-classes-table']) {
            const box = document.getElementById(id).getBoundingClientRect();
            for (const cell of document.querySelectorAll(`#${id} th, #${id} td`)) {
                const r = cell.getBoundingClientRect();
                if (r.width && (r.right > Math.min(box.right, edge) + 0.5 || r.left < box.left - 0.5))
                    out.push([id, cell.innerText.trim()]);
            }
        }
        for (const id of ['finetune-curve', 'finetune-confusion', 'finetune-try']) {
            const box = document.getElementById(id).getBoundingClientRect();
            const inner = document.querySelector(`#${id} .main-svg`) || document.getElementById(id);
            const r = inner.getBoundingClientRect();
            if (r.right > Math.min(box.right, edge) + 0.5) out.push([id, Math.round(r.right - box.right)]);
        }
        return out;
    }""")
