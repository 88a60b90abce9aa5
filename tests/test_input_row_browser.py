"""The input row in Chromium on a phone and in presenter mode: a model's long name in the model list stops short of
the list's arrow (it ran under it)."""

from __future__ import annotations

import shutil

import pytest

from pages import AppPage

pytestmark = [pytest.mark.browser]

LONG = "a-model-fine-tuned-on-movie-reviews-with-a-long-name"


@pytest.fixture(scope="module")
def url(serve_app, tiny_mlm_folder, tmp_path_factory):
    long = shutil.copytree(tiny_mlm_folder, tmp_path_factory.mktemp("models") / LONG)
    return serve_app(long, tiny_mlm_folder).url


TEXT_END_AND_ARROW = """() => {
  const input = document.querySelector('#model input');
  const arrow = input.parentElement.querySelector('.icon-wrap');
  const style = getComputedStyle(input);
  return [input.getBoundingClientRect().right - parseFloat(style.paddingRight), arrow.getBoundingClientRect().left,
          style.textOverflow, input.value];
}"""


@pytest.mark.parametrize("presenter", [False, True], ids=["page", "presenter"])
def test_a_long_model_name_stops_short_of_the_lists_arrow_on_a_phone(browser, url, presenter, tmp_path):
    visitor = AppPage(browser, url, size=(390, 844))
    try:
        visitor.views_drawn()
        if presenter:
            visitor.page.click("#presenter")
            visitor.page.wait_for_function("() => document.body.classList.contains('bv-presenter')")
        text_end, arrow_left, overflow, value = visitor.page.evaluate(TEXT_END_AND_ARROW)
        assert value == LONG and text_end <= arrow_left + 0.5 and overflow == "ellipsis"
        visitor.page.locator("#input-row").screenshot(path=str(tmp_path / f"model-list-{presenter}.png"))
    finally:
        visitor.page.close()
