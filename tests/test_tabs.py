"""The tab contract: every tab of the page follows the `Tab` protocol (app/tabs/base.py), and a tab added to the tuple
of tabs (here one defined in this file, as a new module would define it) shows in the tab bar, wires its controls and
computes after an analysis behind the gate that lets only the open tab compute, with nothing else changed."""

from __future__ import annotations

import inspect

import gradio as gr
import pytest
from gradio_client import Client

from bertviz_app import app
from bertviz_app.app.tabs import TABS, Gate, Tab, TabPage


class TokenCountTab:
    """A tab as small as one can be: how many tokens the analyzed input has, and a button that counts again."""

    id, title = "count-tab", "Token count"
    built: list[TokenCountTab] = []  # every instance, so that the test can reach the page it was built with

    def __init__(self, page: TabPage):
        self.page = page
        self.count = gr.Markdown(elem_id="token-count")
        self.again = gr.Button("Count again", elem_id="count-again")
        TokenCountTab.built.append(self)

    def count_of(self, session) -> str:
        _, run = self.page.models.run_of(session)
        return f"{len(run)} tokens"

    def wire(self) -> None:
        self.again.click(self.count_of, [self.page.session], [self.count], **self.page.api("count_again"))

    def after_analysis(self, event: Gate, public: bool) -> None:
        event.then(self.count_of, [self.page.session], [self.count], **self.page.api("token_count", public))


def required(method) -> list[str]:
    """The parameters a method needs, after self."""
    return [p.name for p in list(inspect.signature(method).parameters.values())[1:]
            if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


@pytest.mark.parametrize("kind", [*TABS, TokenCountTab], ids=lambda kind: kind.__name__)
def test_every_tab_follows_the_protocol(kind):
    assert isinstance(kind.id, str) and kind.id and isinstance(kind.title, str) and kind.title
    assert required(kind.__init__) == ["page"]
    assert required(kind.wire) == []
    assert required(kind.after_analysis) == ["event", "public"]
    if hasattr(kind, "on_load"):
        assert required(kind.on_load) == ["demo"]


def test_the_tabs_have_an_id_and_a_title_of_their_own():
    assert len({kind.id for kind in TABS}) == len({kind.title for kind in TABS}) == len(TABS)
    assert TABS[0].id == "tokens-tab"  # the page opens on the token table


@pytest.fixture(scope="module")
def served(serve_app, tiny_mlm_folder):
    TokenCountTab.built.clear()
    return serve_app(tiny_mlm_folder, tabs=(*TABS, TokenCountTab))


@pytest.fixture(scope="module")
def explorers(served):
    return served.explorers


@pytest.fixture(scope="module")
def demo(served):
    return served.demo


def test_every_tab_built_in_the_page_is_a_tab(demo):
    (count_tab,) = TokenCountTab.built
    page = count_tab.page
    # every tab of the tuple, but one that says it is not shown on this page (the Corpus tab without --corpus)
    assert list(page.tabs) == [kind.id for kind in (*TABS, TokenCountTab) if kind.id != "corpus-tab"]
    assert not TABS[[kind.id for kind in TABS].index("corpus-tab")].shown(page)
    assert all(isinstance(tab, Tab) for tab in page.tabs.values())
    assert not isinstance(object(), Tab)  # the check is not vacuous: an object without the methods is no tab


def test_a_tab_added_to_the_tuple_shows_wires_and_computes_behind_the_gate(demo):
    config = demo.get_config_file()
    components = {c["id"]: c for c in config["components"]}
    (tab_bar,) = [c for c in components.values() if c["props"].get("elem_id") == "tabs"]
    items = [c for c in components.values() if c["type"] == "tabitem"]
    assert [c["props"]["label"] for c in items][-1] == "Token count" and items[-1]["props"]["id"] == "count-tab"
    assert len(items) == len(TABS) - 1 + 1 and tab_bar  # all of TABS but the Corpus tab (no --corpus), and this one
    deps = {d["id"]: d for d in config["dependencies"]}
    named = {d["api_name"]: d for d in deps.values()}
    # its own button
    button = next(i for i, c in components.items() if c["props"].get("elem_id") == "count-again")
    assert [tuple(t) for t in named["count_again"]["targets"]] == [(button, "click")]
    # after the public analysis: behind a js step that throws unless the tab is open, and run only on its success
    gate = deps[named["token_count"]["trigger_after"]]
    assert named["token_count"]["trigger_only_on_success"] and gate["js"] and gate["backend_fn"] is False
    assert '"count-tab"' in gate["js"] and "computed when opened" in gate["js"]
    assert deps[gate["trigger_after"]]["api_name"] == "analyze"
    # and when it is opened, if what it shows belongs to an earlier analysis
    item = next(i for i, c in components.items() if c["type"] == "tabitem" and c["props"]["id"] == "count-tab")
    (opened,) = [d for d in deps.values() if [tuple(t) for t in d["targets"]] == [(item, "select")]]
    assert "up to date" in opened["js"]
    after_opened = [d for d in deps.values() if d.get("trigger_after") == opened["id"]]
    (step,) = after_opened  # a private use of the same handler (gradio numbers the later ones: _token_count_3)
    assert step["api_name"].startswith("_token_count") and step["trigger_only_on_success"]


@pytest.fixture(scope="module")
def server(served):
    return served.url


def test_the_added_tab_answers_through_its_endpoints(server, explorers):
    client = Client(server, verbose=False)
    (name, explorer), = explorers.items()
    client.predict(name, "Penguins huddle together.", "", api_name="/analyze")
    tokens = len(explorer.run("Penguins huddle together.").labels)
    assert client.predict(api_name="/token_count") == f"{tokens} tokens"
    assert client.predict(api_name="/count_again") == f"{tokens} tokens"


def test_something_that_is_not_a_tab_is_refused_in_words(explorers):
    class Unfinished:
        id, title = "unfinished-tab", "Unfinished"

    with pytest.raises(ValueError, match="Unfinished is not a tab: it lacks wire, after_analysis"):
        app.build_demo(explorers, tabs=(*TABS, Unfinished))
    with pytest.raises(ValueError, match="one id per tab"):
        app.build_demo(explorers, tabs=(*TABS, TABS[1]))
