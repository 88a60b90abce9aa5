"""The Timeline tab in Chromium: a model folder with a training timeline (conftest's fine-tuned classifier, 10
snapshots, one page) plays through every snapshot with no request to the server, the views' picture changes from step
to step, a click on an "All heads" tile during playback keeps that head, and the phone's width shows the same. With
pages of three snapshots, the slider moving past the pages held asks for the next page once, and moving within them
asks nothing. Screenshots go to tmp_path and, with BERTVIZ_SCREENSHOTS=DIR, to DIR (app_timeline_*.png)."""

from __future__ import annotations

import pytest

import bertviz_app
from bertviz_app import limits
from bertviz_app.timeline import open_timeline
from pages import TIMEOUT_MS, AppPage, serving, shoot

pytestmark = [pytest.mark.browser]

STEP = "() => document.querySelector('#tl-timeline-views')?.dataset.step"


@pytest.fixture(scope="module")
def server(serve_app, finetuned_classifier):
    return serve_app(finetuned_classifier).url


def _at(page, step: int) -> None:
    page.wait_for_function(f"s => ({STEP})() === String(s)", arg=step)


def _picture(page, view: str = "lines") -> str:
    return page.eval_on_selector(f"#tl-view-pane-{view} canvas", "c => c.toDataURL()")


def _places(page) -> list:
    """Where the slider's track and the picture of roles are, across (x and width)."""
    return [(round(b["x"]), round(b["width"])) for b in (page.locator(s).bounding_box()
                                                        for s in ("#tl-timeline-step", "#tl-timeline-roles"))]


def _play_through(v: AppPage, steps: list[int], tmp_path, name: str) -> list[str]:
    """Slide to the first snapshot, look, then play to the last: no request on the way, and the slider and the
    picture of roles stay where they are; the pictures seen."""
    page = v.page
    v.set_input("#tl-timeline-step", 0)
    _at(page, steps[0])
    page.eval_on_selector("#tl-timeline", "e => e.scrollIntoView({ block: 'start' })")  # the bar and the views
    page.wait_for_timeout(100)  # the new views paint on the next frame
    pictures = [_picture(page)]
    places = _places(page)
    shoot(page, tmp_path, f"timeline_{name}_step{steps[0]}")
    asked = len(v.requests)
    page.click("#tl-timeline-play")
    middle = steps[len(steps) // 2]
    _at(page, middle)
    page.wait_for_timeout(100)
    pictures.append(_picture(page))
    shoot(page, tmp_path, f"timeline_{name}_step{middle}")
    page.wait_for_function(f"s => ({STEP})() === String(s) && document.querySelector('#tl-timeline-play')"
                           ".textContent === 'Play'", arg=steps[-1], timeout=TIMEOUT_MS)
    page.wait_for_timeout(100)
    pictures.append(_picture(page))
    shoot(page, tmp_path, f"timeline_{name}_step{steps[-1]}")
    assert v.requests[asked:] == [], "moving through the snapshots asked the server"
    assert _places(page) == places, f"the slider or the picture moved between step {steps[0]} and {steps[-1]}"
    return pictures


def test_the_slider_plays_through_the_timeline_without_asking_the_server(browser, server, finetuned_classifier,
                                                                         tmp_path):
    steps = open_timeline(finetuned_classifier).steps
    v = AppPage(browser, server)
    page = v.page
    v.views_drawn()
    v.open_tab("Timeline")
    page.wait_for_function("() => document.querySelector('#timeline-status')?.innerText.includes('snapshots')")
    _at(page, steps[-1])  # it opens on the trained model
    assert page.locator("#tl-timeline-at").inner_text().startswith(f"step {steps[-1]}")
    assert "predicts" in page.locator("#tl-timeline-prediction").inner_text()  # the classifier's answer
    pictures = _play_through(v, steps, tmp_path, "wide")
    assert len(set(pictures)) == 3, "the views drew the same picture at three steps"
    # the query/key view says why it has nothing, and the others still draw
    page.click("#tl-view-tab-qk")
    page.wait_for_function("() => document.querySelector('#tl-view-pane-qk')?.innerText"
                           ".includes(\"keeps every head's attention, not its query and key\")")
    page.click("#tl-view-tab-lines")
    v.views_drawn()  # the main views under the input are untouched

    # a click on an All heads tile while playing keeps that head for the rest of the timeline
    page.click("#tl-view-tab-overview")
    v.set_input("#tl-timeline-step", 0)
    _at(page, steps[0])
    page.click("#tl-timeline-play")
    _at(page, steps[1])
    page.eval_on_selector("#tl-view-pane-overview .bv-scroller", "e => e.scrollIntoView({ block: 'center' })")
    g = page.eval_on_selector("#tl-view-pane-overview .bv-scroller", "e => JSON.parse(e.dataset.geometry)")
    box = page.locator("#tl-view-pane-overview .bv-scroller").bounding_box()
    page.mouse.click(box["x"] + g["left"] + 1 * (g["tile"] + g["gap"]) + g["tile"] / 2,
                     box["y"] + g["top"] + 1 * g["rowPitch"] + g["tile"] / 2)  # layer 1, head 1
    page.wait_for_function(f"s => ({STEP})() === String(s)", arg=steps[-1], timeout=TIMEOUT_MS)
    head = page.evaluate("() => [document.querySelector('#tl-view-layer').value, "
                         "document.querySelector('#tl-view-head').value]")
    assert head == ["1", "1"]
    assert v.errors == []

    with v.on_a_phone():
        page.wait_for_timeout(300)
        page.locator("#tl-timeline").scroll_into_view_if_needed()
        pictures = _play_through(v, steps, tmp_path, "phone")
        assert len(set(pictures)) == 3
        assert v.no_sideways_scroll()
    assert v.errors == []


@pytest.fixture(scope="module")
def paged_server(finetuned_classifier):
    """The same model served with pages of three snapshots (the largest payload's size, three times)."""
    timeline = open_timeline(finetuned_classifier)
    largest = max(len(timeline.payload(step, 0)) for step in timeline.steps)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(limits, "TIMELINE_PAGE_BYTES", 3 * largest)
        with serving({"trained": bertviz_app.load(finetuned_classifier, device="cpu", name="trained")}) as served:
            yield served.url


def test_the_slider_asks_for_a_page_it_does_not_hold_and_only_then(browser, paged_server, finetuned_classifier,
                                                                     tmp_path):
    steps = open_timeline(finetuned_classifier).steps  # pages [0 1 2] [3 4 5] [6 7 8] [9]; it opens on [9]
    v = AppPage(browser, paged_server)
    page = v.page
    v.views_drawn()
    v.open_tab("Timeline")
    _at(page, steps[-1])
    v.settle()

    def slide(index: int) -> int:
        """The requests the page made to show snapshot `index`."""
        asked = len(v.requests)
        v.set_input("#tl-timeline-step", index)
        _at(page, steps[index])
        return len(v.requests) - asked

    before = _picture(page)
    assert slide(7) >= 1  # past the page held: the next page comes
    assert _picture(page) != before
    page.eval_on_selector("#tl-timeline", "e => e.scrollIntoView({ block: 'start' })")
    page.wait_for_timeout(100)  # the new views paint on the next frame
    shoot(page, tmp_path, f"timeline_paged_step{steps[7]}")
    assert [slide(i) for i in (6, 8, 7, 9, 8)] == [0] * 5  # within the two pages held: nothing asked
    assert slide(4) >= 1
    assert [slide(i) for i in (3, 5, 9)] == [0] * 3
    with v.on_a_phone():
        assert slide(1) >= 1
        page.locator("#tl-timeline").scroll_into_view_if_needed()
        page.wait_for_timeout(300)
        shoot(page, tmp_path, f"timeline_paged_phone_step{steps[1]}")
        assert v.no_sideways_scroll()
    assert v.errors == [] and page.locator(".toast-body").count() == 0
