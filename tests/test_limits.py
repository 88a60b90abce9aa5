"""What one visitor (or anyone who can reach the port) can make the server hold or do: the Run cache, request bodies,
the queue, uploads, sessions, and what the login protects. Servers here are real (`app.serve` on a free 127.0.0.1
port) and serve the tiny random BERT, so that the HTTP surface, not the model, is what is tested."""

from __future__ import annotations

import gc
import inspect
import json
import logging
import uuid
import weakref

import gradio as gr
import httpx
import pytest
import torch

from bertviz_app import BertConfig, BertForPreTraining, Explorer, Tokenizer, app
from bertviz_app.app import common
from bertviz_app.catalog import minilm_path


def tiny_explorer(cache_mb: float) -> Explorer:
    torch.manual_seed(0)
    config = BertConfig.preset("tiny", vocab_size=30522)
    tokenizer = Tokenizer.from_folder(minilm_path(), max_tokens=config.max_position_embeddings)
    return Explorer(BertForPreTraining(config), tokenizer, torch.device("cpu"), "tiny", cache_mb=cache_mb)


# --- the Run cache ----------------------------------------------------------------------------------------------
def test_an_evicted_run_is_freed_at_once():
    """Reference counting alone must free a Run the cache dropped: the cyclic collector runs when enough objects were
    made, not bytes, so a Run caught in a cycle stays long after its eviction (a server grew by its 55 MB Runs)."""
    explorer = tiny_explorer(cache_mb=0)  # keeps only the newest Run
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        run = explorer.run("The first sentence.")
        run.plot.attention(0, 0)  # drawing must not tie the Run to itself
        run.plot.head_overview()
        run.rollout(1)  # nor must the derived numbers
        first = weakref.ref(run)
        del run
        explorer.run("A second sentence takes its place.")
        assert first() is None, "the evicted Run is still alive: something holds it in a reference cycle"
    finally:
        if was_enabled:
            gc.enable()


def test_the_cache_keeps_runs_within_its_bytes():
    explorer = tiny_explorer(cache_mb=0.05)
    one = explorer.run("Sentence number 0 is here.").nbytes
    for i in range(1, 30):
        explorer.run(f"Sentence number {i} is here.")
    assert one * 2 <= explorer.cached_bytes <= 0.05 * 2**20


# --- servers ------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def explorers(tiny_mlm_folder):
    return app.load_models([tiny_mlm_folder], device="cpu", max_tokens=64)


@pytest.fixture(scope="module")
def served(explorers):
    """(url, demo) of the app as `bertviz-app serve` runs it, without --auth."""
    demo = app.build_demo(explorers)
    url = app.serve(demo, port=app.free_port(), block=False)
    yield url, demo
    demo.close()


@pytest.fixture(scope="module")
def server(served):
    return served[0]


@pytest.fixture(scope="module")
def events(server) -> dict[str, int]:
    """api name -> fn_index, from the page's config."""
    config = httpx.get(server + "config").json()
    return {d["api_name"]: d["id"] for d in config["dependencies"] if d.get("api_name")}


@pytest.fixture(scope="module")
def model_name(explorers) -> str:
    return next(iter(explorers))


def event(url: str, fn_index: int, data_json: str, session: str | None = None) -> dict:
    """Join the queue with `data_json` written as is (JSON that Python's json module would not write: 1e400, lone
    surrogates) and return the event's process_completed message."""
    session = session or uuid.uuid4().hex[:12]
    body = ('{"data": %s, "fn_index": %d, "session_hash": "%s", "event_data": null, "trigger_id": null}'
            % (data_json, fn_index, session)).encode()
    joined = httpx.post(url + "gradio_api/queue/join", content=body, headers={"content-type": "application/json"})
    assert joined.status_code == 200, joined.text
    with httpx.stream("GET", url + f"gradio_api/queue/data?session_hash={session}", timeout=60) as stream:
        for line in stream.iter_lines():
            if line.startswith("data:"):
                message = json.loads(line[5:])
                if message.get("msg") == "process_completed":
                    return message
    raise AssertionError("the event stream ended without a result")


# --- messages -----------------------------------------------------------------------------------------------------
def refusal(message: dict) -> str:
    assert message["success"] is False, message
    text = message["output"]["error"]
    assert text and "Something went wrong" not in text, message  # words, and not the "our bug" apology
    return text


@pytest.fixture
def uvicorn_errors():
    """Records of uvicorn's error log ("Exception in ASGI application"), which does not reach the root logger."""
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(handler)
    yield records
    logger.removeHandler(handler)


@pytest.mark.parametrize("what, data, words", [
    ("surrogate in a text", '[M, "abc \\ud800 def", "", 0, 0, "all", false, 0]', "Sentence A contains a character"),
    ("surrogate in the model", '["x\\udfffy", "abc", "", 0, 0, "all", false, 0]', "Model contains a character"),
    ("surrogate in the segment", '[M, "abc", "", 0, 0, "\\ud83d", false, 0]', "Segments (from → to) contains"),
    ("1e400 for the layer", '[M, "abc", "", 1e400, 0, "all", false, 0]', "Layer must be a finite number, not inf"),
    ("1e400 for the token", '[M, "abc", "", 0, 0, "all", false, 1e400]', "Token (attention to and from it) must"),
    ("-1e400 for the head", '[M, "abc", "", 0, -1e400, "all", false, 0]', "Head must be a finite number, not -inf"),
    ("text for the layer", '[M, "abc", "", "two", 0, "all", false, 0]', "Layer must be a number, not text"),
    ("a list for the text", '[M, ["abc"], "", 0, 0, "all", false, 0]', "Sentence A must be text, not a list"),
    ("an object for a number", '[M, "abc", "", 0, {"a": 1}, "all", false, 0]', "Head must be a number, not an obj"),
    ("text for the checkbox", '[M, "abc", "", 0, 0, "all", "yes", 0]', "Hide [CLS] and [SEP] must be true or false"),
    ("missing values", '[M, "abc"]', "Missing values: Sentence B (optional), Layer, Head"),
])
def test_bad_values_are_refused_in_words_that_name_the_field(server, events, model_name, uvicorn_errors, what, data,
                                                             words):
    message = event(server, events["analyze"], data.replace("M", json.dumps(model_name), 1))
    assert words in refusal(message)
    assert not [r for r in uvicorn_errors if r.levelno >= logging.ERROR], [r.getMessage() for r in uvicorn_errors]


def test_bad_numbers_elsewhere_are_refused_in_words(server, events, model_name):
    assert "Predictions per mask must be a finite number" in refusal(
        event(server, events["fill_mask"], f'[{json.dumps(model_name)}, "a [MASK].", 1e400]'))
    event(server, events["analyze"], json.dumps([model_name, "abc", "", 0, 0, "all", False, 0]), session="numbers")
    assert "Token to mask" in refusal(event(server, events["mask_token"], '[null, 1e400, 3]', session="numbers"))
    assert "Sample (random seed) must be a finite number" in refusal(
        event(server, events["corrupt"], '[null, 1e400]', session="numbers"))


def test_index_values_refuse_infinity_in_words():
    with pytest.raises(gr.Error, match="Token must be a whole number"):
        common.index_value(float("inf"), 10, "Token")
    with pytest.raises(gr.Error, match="Sentence A contains a character that is not text"):
        common.text_value("a\udc80b", "Sentence A")


# --- the gradio internals these bounds rely on --------------------------------------------------------------------
def test_gradio_internals_check_inputs_first_is_in_place(served):
    """check_inputs_first replaces Blocks.preprocess_data(block_fn, inputs, state, explicit_call); if gradio renames
    or reshapes it, this fails (the message tests above would then fail with gradio's wordless errors)."""
    _, demo = served
    assert {"block_fn", "inputs"} <= set(inspect.signature(gr.Blocks.preprocess_data).parameters)
    assert getattr(demo.preprocess_data, "checks_inputs_first", False)
