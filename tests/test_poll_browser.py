"""A class poll in Chromium: the presenting page (the app, in presenter mode, on a shipped lesson's question step)
opens a poll; 30 phones (each a browser context of its own, 390 x 844) open its address and answer; the presenter's
tally equals the answers; a second answer from a phone changes nothing; Reveal closes the poll, and an answer after
that is refused in one sentence. Screenshots of the presenter's screen and a phone go to /tmp/course-shots (and
BERTVIZ_SCREENSHOTS when it is set)."""

from __future__ import annotations

import pytest

import bertviz_app
from conftest import CHROMIUM
from pages import AppPage, serving
from test_course_browser import LESSONS, at_step, keep

pytestmark = [pytest.mark.browser, pytest.mark.real_weights]

PHONES = 30
LESSON, STEP = "03-one-head-two-ways", 2
ANSWER_JS = """async (choice) => { const code = document.querySelector('#code').textContent;
  const r = await fetch(`/poll/answer/${code}`, { method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ choice }) });
  return [r.status, (await r.json()).error || null]; }"""


@pytest.fixture(scope="module")
def chromium():
    """Chromium itself (conftest's `browser` is one persistent context): each phone gets a context of its own, with
    its own cookies, as separate phones have."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), headless=True,
                                     args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            yield browser
        finally:
            browser.close()


@pytest.mark.slow  # 50-100 s: thirty pages
def test_thirty_phones_answer_and_the_presenter_sees_the_tally(chromium):
    browser = chromium
    question = LESSONS[LESSON]["steps"][STEP - 1]["question"]
    picks = [i % len(question["choices"]) for i in range(PHONES)]
    with serving(bertviz_app.load(device="cpu")) as served:
        url = served.url
        presenter = AppPage(browser, f"{url}?lesson={LESSON}&step={STEP}")
        page = presenter.page
        phones = []
        try:
            at_step(page, STEP)
            page.click("#presenter")
            page.click("#lesson-poll")
            address = page.locator("#lesson-poll-address").text_content()
            assert address.startswith(f"{url.rstrip('/')}/p/") and len(address.rsplit("/", 1)[1]) == 5
            assert page.get_attribute("#lesson-poll-qr", "src").startswith("data:image/svg+xml")
            for pick in picks:
                context = browser.new_context(viewport={"width": 390, "height": 844})
                phone = context.new_page()
                phones.append((context, phone))
                phone.goto(address)
                phone.locator("#choice-0").wait_for()
                assert phone.text_content("#ask") == question["ask"]
                phone.click(f"#choice-{pick}")
                phone.wait_for_function("() => document.querySelector('#said').textContent.startsWith('Counted')")
            keep(phones[0][1], "poll_phone_390x844.png")
            counts = [picks.count(i) for i in range(len(question["choices"]))]
            page.wait_for_function("n => document.querySelector('#lesson-tally')?.dataset.answers === n",
                                   arg=str(PHONES))
            assert [int(c) for c in page.eval_on_selector_all("#lesson-tally li", "ls => ls.map(l => l.dataset.count)")
                    ] == counts
            keep(page, "poll_presenter_1280x720.png")
            # a phone answering again: refused, and the tally stays
            status, error = phones[0][1].evaluate(ANSWER_JS, 3)
            assert (status, error) == (409, "This phone has answered already; its first answer stands.")
            # Reveal: the poll closes, the last tally stays, answers after are refused in one sentence
            page.click("#lesson-reveal")
            page.wait_for_function("() => document.querySelector('#lesson-tally').dataset.open === 'false'")
            assert page.locator("#lesson-tally").get_attribute("data-answers") == str(PHONES)
            late = browser.new_context(viewport={"width": 390, "height": 844})
            phones.append((late, late.new_page()))
            phones[-1][1].goto(address)
            assert phones[-1][1].text_content("#said") == "This poll is closed: the answer is on the teacher's screen."
            status, error = phones[1][1].evaluate(ANSWER_JS, 0)
            assert (status, error) == (410, "This poll is closed: the answer is on the teacher's screen.")
            assert presenter.errors == []
        finally:
            for context, _ in phones:
                context.close()
            page.close()
