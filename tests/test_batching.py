"""New inputs that arrive together go through the model as one padded batch (bertviz_app/batching.py): each input's
Run is, like the Run of a pass of that input alone, a float32 pass within float32's rounding of a float64 pass of the
same model, and equals transformers within 1e-5, in every family (RoBERTa counts positions from its padding, DeBERTa's
relative positions depend on the length), and the batcher itself batches only what waits, keeps to its bounds and keeps
one input's failure its own.

Why not bit for bit: padding changes the shapes of the attention products, and with them how a CPU's kernels split
their sums, and every CPU splits them its own way. So the tolerance is not a difference seen on one CPU (2e-6 was, and
another CPU gave 2.1e-6): it is derived from the arithmetic (`float32_bound`), and each pass is compared with the
float64 pass, which no summation order moves.

"""

import threading
import time

import numpy as np
import pytest
import torch
import transformers

import family_models
from bertviz_app import catalog, load
from bertviz_app.batching import Batcher
from bertviz_app.run import Run
from bertviz_app.serving import AnalysisPass, TracedPass

ARRAYS = ("hidden_states", "attentions", "queries", "keys", "value_grams", "token_embeddings", "segment_embeddings",
          "position_embeddings", "pooler_output")


# --- the batcher -----------------------------------------------------------------------------------------------------
def blocking_batcher(at_once=1, max_items=16, fits=lambda items: True):
    """A batcher whose passes record their items and wait until `release` is set; (batcher, passes, release)."""
    passes, release, lock = [], threading.Event(), threading.Lock()
    running = [0, 0]  # now, most at once

    def run_many(items):
        with lock:
            passes.append(list(items))
            running[0] += 1
            running[1] = max(running)
        release.wait(10)
        with lock:
            running[0] -= 1
        return [item * 10 for item in items]

    batcher = Batcher(run_many, at_once=at_once, max_items=max_items, fits=fits)
    batcher.most_at_once = lambda: running[1]
    return batcher, passes, release


def wait_until(condition, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def waiting(batcher) -> list:
    with batcher._lock:
        return [job.item for job in batcher._waiting]


def submit_all(batcher, items, results, passes) -> list[threading.Thread]:
    """Each item from its own thread, in order, each once the one before waits or runs."""
    threads = []
    for item in items:
        threads.append(threading.Thread(target=lambda i=item: results.__setitem__(i, batcher.submit(i))))
        threads[-1].start()
        wait_until(lambda i=item: i in waiting(batcher) or any(i in p for p in list(passes)))
    return threads


def test_a_lone_item_runs_at_once_alone():
    batcher = Batcher(lambda items: [len(items)])
    start = time.perf_counter()
    assert batcher.submit("x") == 1
    assert time.perf_counter() - start < 0.5


def test_items_that_wait_while_a_pass_runs_go_together_in_the_next():
    batcher, passes, release = blocking_batcher()
    results = {}
    first = submit_all(batcher, [1], results, passes)
    rest = submit_all(batcher, [2, 3, 4], results, passes)  # they wait: the one pass allowed is busy
    release.set()
    for thread in first + rest:
        thread.join(10)
    assert passes == [[1], [2, 3, 4]]
    assert results == {1: 10, 2: 20, 3: 30, 4: 40}


def test_a_pass_keeps_to_its_item_count_its_budget_and_the_passes_at_once():
    batcher, passes, release = blocking_batcher(at_once=2, max_items=3, fits=lambda items: sum(items) <= 12)
    results = {}
    first = submit_all(batcher, [1, 2], results, passes)  # two passes at once, one item each
    wait_until(lambda: len(passes) == 2)
    rest = submit_all(batcher, [3, 4, 5, 6, 7, 8, 0], results, passes)
    release.set()
    for thread in first + rest:
        thread.join(10)
    # in order of arrival: three at most, and 6 + 7 > 12 (the budget), while 8 + 0 fits
    assert sorted(passes[:2]) == [[1], [2]] and passes[2:] == [[3, 4, 5], [6], [7], [8, 0]]
    assert batcher.most_at_once() == 2
    assert results == {i: 10 * i for i in range(9)}


def test_one_items_failure_is_its_own():
    def run_many(items):
        if "bad" in items:
            raise ValueError("bad input")
        return [item.upper() for item in items]

    gate = threading.Event()
    slow = Batcher(lambda items: gate.wait(10) and run_many(items))
    results, errors = {}, {}

    def submit(item):
        try:
            results[item] = slow.submit(item)
        except ValueError as err:
            errors[item] = str(err)

    threads = [threading.Thread(target=submit, args=(item,)) for item in ("a", "b", "bad", "c")]
    threads[0].start()
    wait_until(lambda: not waiting(slow))  # "a" runs, alone
    for thread in threads[1:]:
        thread.start()
    wait_until(lambda: len(waiting(slow)) == 3)
    gate.set()
    for thread in threads:
        thread.join(10)
    assert results == {"a": "A", "b": "B", "c": "C"} and errors == {"bad": "bad input"}


def test_the_batcher_refuses_impossible_bounds():
    with pytest.raises(ValueError, match="at least one pass"):
        Batcher(lambda items: items, at_once=0)


# --- the model, batched ----------------------------------------------------------------------------------------------
SENTENCES = [("The cat sat on the mat.", None), ("A bird sang in the tree, and the sun was warm.", "Paris!"),
             ("Dogs bark.", "The keys to the cabinet were lost yesterday!"),
             ("She poured a cup of tea for her friend, who was tired.", None)]


def float32_bound(config) -> float:
    """How far, in parts of an array's largest magnitude (at least 1), a float32 pass may lie from the float64 pass.

    A float32 sum of n terms carries a rounding error of about sqrt(n) * eps of its magnitude: each addition rounds
    by at most eps/2, with signs that do not conspire (Higham and Mary, "A new approach to probabilistic rounding
    error analysis", 2019). Along a pass the longest chain of sums is the layers' feed-forward products, n =
    intermediate_size terms in each of num_hidden_layers layers, and LayerNorm keeps each layer's errors from growing
    with the next, so an output carries sqrt(layers * intermediate_size) * eps at most: 192 eps = 2.3e-5 for the
    default model, whose passes measure 12.5 eps at most, and 12.5 eps for the tiny family models (3.8 measured).
    A padding that leaks into an input moves its numbers by 1e-3 and more: far outside."""
    return float(np.sqrt(config.num_hidden_layers * config.intermediate_size) * np.finfo(np.float32).eps)


def float64_explorer(path: str | None = None):
    """The same model in float64, in Python (the trace is recorded for float32): the exact numbers a float32 pass
    rounds."""
    explorer = load(path, device="cpu")
    explorer.model.double()
    explorer._pass = TracedPass(AnalysisPass(explorer.model.bert, Run.POINTS).eval())
    return explorer


def assert_exact_to_float32(run, exact, tol):
    """`run` (float32) within `tol` of each array's scale from `exact` (the float64 pass of the same encoding)."""
    assert run.tokens == exact.tokens
    for name in ARRAYS:
        a, b = getattr(exact, name), getattr(run, name)
        if a is None:
            assert b is None, name
            continue
        assert a.shape == b.shape, name
        a = a.astype(np.float64)
        np.testing.assert_allclose(b, a, atol=tol * max(1.0, float(np.abs(a).max())), rtol=0, err_msg=name)
    if exact.is_next_probability is not None:
        assert abs(exact.is_next_probability - run.is_next_probability) <= tol


def assert_batched_is_alone(explorer, exact, encoding, batched):
    """A batched Run and the Run of its input alone are both float32 roundings of the float64 Run."""
    tol = float32_bound(explorer.config)
    assert_exact_to_float32(explorer._forward(encoding), exact._forward(encoding), tol)
    assert_exact_to_float32(batched, exact._forward(encoding), tol)


@pytest.fixture(scope="module")
def default_explorer():
    return load(device="cpu")


@pytest.fixture(scope="module")
def exact_explorer():
    return float64_explorer()


def test_a_batched_run_is_the_run_of_its_input_alone(default_explorer, exact_explorer):
    explorer = default_explorer
    encodings = [explorer.encode(a, b) for a, b in SENTENCES]
    assert len({len(e) for e in encodings}) == len(encodings)  # lengths differ: all padded but the longest
    batched = explorer._forward_many(encodings)
    for encoding, run in zip(encodings, batched):
        assert_batched_is_alone(explorer, exact_explorer, encoding, run)
        np.testing.assert_allclose(run.attentions.astype(np.float64).sum(-1), 1.0, atol=1e-6, rtol=0)
        assert run.token_embeddings.base is None  # a copy, not a view that keeps the whole batch alive


def test_a_batched_run_is_transformers(default_explorer):
    hf = transformers.BertForPreTraining.from_pretrained(catalog.default_model_path(), attn_implementation="eager",
                                                         dtype=torch.float32).eval()
    encodings = [default_explorer.encode(a, b) for a, b in SENTENCES]
    for encoding, run in zip(encodings, default_explorer._forward_many(encodings)):
        with torch.no_grad():
            out = hf(torch.tensor([encoding.ids]), token_type_ids=torch.tensor([encoding.segment_ids]),
                     output_attentions=True, output_hidden_states=True)
        tol = dict(atol=1e-5, rtol=1e-5)
        np.testing.assert_allclose(run.attentions, torch.stack([a[0] for a in out.attentions]).numpy(), **tol)
        np.testing.assert_allclose(run.hidden_states, torch.stack([h[0] for h in out.hidden_states]).numpy(), **tol)
        assert abs(run.is_next_probability - float(out.seq_relationship_logits[0].softmax(-1)[0])) <= 1e-5


@pytest.mark.parametrize("family", ["roberta", "albert", "deberta-v2", "distilbert"])
def test_a_batched_run_is_the_run_alone_in_every_family(family, tmp_path):
    family_models.build(family, tmp_path)
    explorer, exact = load(str(tmp_path), device="cpu"), float64_explorer(str(tmp_path))
    encodings = [explorer.encode(a, b) for a, b in SENTENCES]
    for encoding, run in zip(encodings, explorer._forward_many(encodings)):
        assert_batched_is_alone(explorer, exact, encoding, run)


@pytest.mark.parametrize("family", [None, "roberta", "albert", "electra", "distilbert", "deberta-v2"])
def test_the_analysis_pass_is_traced_and_gives_the_eager_numbers_exactly(family, default_explorer, tmp_path):
    """A server's passes run as TorchScript (serving.analysis_pass: one call into C++, never giving up the GIL between
    operations), bit for bit the Python pass, padded or not; DeBERTa's relative positions keep the Python pass."""
    if family is not None:
        family_models.build(family, tmp_path)
    explorer = default_explorer if family is None else load(str(tmp_path), device="cpu")
    traced = explorer._analysis_pass()
    assert traced.traced == (family != "deberta-v2")
    encodings = [explorer.encode(a, b) for a, b in SENTENCES]
    T = max(map(len, encodings))
    pad = explorer.config.pad_token_id or 0
    ids = torch.tensor([e.ids + [pad] * (T - len(e)) for e in encodings])
    segments = torch.tensor([e.segment_ids + [0] * (T - len(e)) for e in encodings])
    mask = torch.tensor([[1] * len(e) + [0] * (T - len(e)) for e in encodings])
    for inputs in ((ids, segments, mask), (ids[:1, :len(encodings[0])], segments[:1, :len(encodings[0])],
                                           mask[:1, :len(encodings[0])])):
        with torch.inference_mode():
            ours = traced(*inputs)
            pooler = ("pooler",) if explorer.model.bert.pooler is not None else ()
            eager = explorer.model.bert(*inputs, capture=Run.POINTS + pooler)
        assert ours.captured.keys() == eager.captured.keys()  # every point a Run reads, by name, and the pooler's
        assert len(ours.captured) == 4 + 5 * explorer.config.num_hidden_layers + (eager.pooler_output is not None)
        for name, value in eager.captured.items():
            assert torch.equal(ours.captured[name], value), name
        assert (ours.pooler_output is None) == (eager.pooler_output is None)
        assert eager.pooler_output is None or torch.equal(ours.pooler_output, eager.pooler_output)
    assert not traced(*inputs).last_hidden_state.requires_grad  # called in grad mode too: a pass for inference


def test_inputs_that_arrive_together_share_a_pass(default_explorer, exact_explorer, monkeypatch):
    explorer = load(device="cpu")
    sizes, gate = [], threading.Event()
    forward_many = explorer._forward_many

    def recorded(encodings):
        sizes.append(len(encodings))
        gate.wait(10)
        return forward_many(encodings)

    monkeypatch.setattr(explorer, "_forward_many", recorded)
    explorer.forward_passes = 1  # a new batcher, around the recorded pass
    runs = {}
    threads = [threading.Thread(target=lambda k=k: runs.__setitem__(k, explorer.run(f"Sentence number {k}.")))
               for k in range(5)]
    threads[0].start()
    wait_until(lambda: sizes)
    for thread in threads[1:]:
        thread.start()
    wait_until(lambda: len(waiting(explorer._batches)) == 4)
    gate.set()
    for thread in threads:
        thread.join(30)
    assert sizes == [1, 4]
    for k, run in runs.items():
        assert run.encoding.text == f"Sentence number {k}." and explorer.cached_run(run.encoding.text) is run
        assert_batched_is_alone(default_explorer, exact_explorer, run.encoding, run)
