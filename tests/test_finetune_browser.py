"""The Fine-tune tab in a real browser (Debian's headless Chromium through playwright): a short training started
from the tab draws its loss curve and epoch table, and the new model joins the model list, where picking it
analyzes with it at once. Screenshots go to tmp_path and, with BERTVIZ_SCREENSHOTS=DIR, to DIR (app_finetune_*.png)."""

from __future__ import annotations

import csv

import pytest

from bertviz_app import app
from bertviz_app.app.server.training import TrainingSettings
from pages import TIMEOUT_MS, AppPage, shoot

pytestmark = [pytest.mark.browser]


@pytest.fixture(scope="module")
def server(tiny_mlm_folder, tmp_path_factory):
    folder = tmp_path_factory.mktemp("finetune-data")
    with (folder / "reviews.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["text", "label"])
        writer.writerows([("a good film", "positive"), ("a bad film", "negative")] * 40)
    demo = app.build_demo(app.load_models([tiny_mlm_folder], device="cpu"),
                          training=TrainingSettings(True, "", (str(folder / "reviews.csv"),)))
    url = app.serve(demo, port=app.free_port(), block=False)
    yield url
    demo.close()


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
    status = page.locator("#finetune-status").inner_text()
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
    shoot(page, tmp_path, "finetune_done")
    with v.on_a_phone():
        page.locator("#finetune-status").scroll_into_view_if_needed()
        shoot(page, tmp_path, "finetune_done_phone", full_page=True)
    page.locator("#model input").click()
    page.get_by_role("option", name=name).click()
    v.views_drawn()
    v.open_tab("Task")
    page.wait_for_function("n => document.querySelector('#task')?.innerText.includes('according to ' + n)", arg=name)
    assert not v.errors
