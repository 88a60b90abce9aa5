"""An explanation's batches shared with a helper thread on a spare core (spare_cores.in_chunks): the same numbers bit
for bit as on one thread (the batches are the same and their results are assembled in their order), the progress
told on the calling thread only and only once per batch, and a helper that a busy machine starves never holding the
caller up for long."""

import os
import sys
import threading

import numpy as np
import pytest
import torch

import bertviz_app
from bertviz_app import spare_cores
from bertviz_app.ablation import rank_heads
from bertviz_app.attribution import attribute, blank_out
from bertviz_app.spare_cores import in_chunks

SENTENCE = "The keys to the unbelievably ornate cabinet [MASK] on the table , said the housekeeper . " * 2
SMALL = 16 * 2**20  # bytes per batch: several batches of each part at this length, so that both threads run some


@pytest.fixture(scope="module")
def default():
    return bertviz_app.load(device="cpu")


def explain(explorer, helpers: int, monkeypatch, told: list) -> list[np.ndarray]:
    monkeypatch.setattr(spare_cores, "spare_cores", lambda: helpers)
    model, tokenizer, enc = explorer.model, explorer.tokenizer, explorer.encode(SENTENCE)
    threads = []

    def report(amount):
        told.append(amount)
        threads.append(threading.current_thread())

    ig = attribute(model, tokenizer, enc, steps=20, memory_budget=SMALL, report=report)
    blank = blank_out(model, tokenizer, enc, memory_budget=SMALL, report=report, max_passes=12)
    heads = rank_heads(model, tokenizer, enc, memory_budget=SMALL, report=report)
    assert ig.batch_size < 10 and blank.spans is not None
    assert set(threads) == {threading.main_thread()}  # a progress bar is told from the thread that asked
    return [ig.scores, np.array([ig.f_input, ig.f_baseline, ig.delta]), blank.values, heads.effects]


def test_an_explanation_with_a_helper_is_the_same_bit_for_bit(default, monkeypatch):
    alone_told, shared_told = [], []
    alone = explain(default, 0, monkeypatch, alone_told)
    shared = explain(default, 1, monkeypatch, shared_told)
    for a, b in zip(alone, shared):
        np.testing.assert_array_equal(a, b)
    # the same progress in all (a helper's may reach the bar several batches at once), each batch's told once
    assert sum(shared_told) == pytest.approx(sum(alone_told), rel=1e-12) and len(shared_told) > 3


def test_results_in_order_and_modes_of_the_caller():
    def work(i, told):
        told(1.0)
        return i, torch.is_inference_mode_enabled(), torch.is_grad_enabled()

    told = []
    with torch.inference_mode():
        out = in_chunks(work, 9, told.append, helpers=2)
    assert [i for i, _, _ in out] == list(range(9)) and all(inference for _, inference, _ in out)
    assert sum(told) == 9.0
    with torch.no_grad():
        assert not any(grad for _, _, grad in in_chunks(work, 4, helpers=1))
    assert in_chunks(work, 0) == []


def test_a_starved_helper_does_not_hold_the_caller_up():
    """A helper stuck in its call (as on a machine whose cores are busy): the caller, out of calls to start, runs the
    stuck one itself and returns; the helper's late result is dropped."""
    release, taken, stuck = threading.Event(), threading.Event(), []

    def work(i, told):
        if threading.current_thread() is not threading.main_thread():
            stuck.append(i)
            taken.set()
            release.wait(30)
        else:
            taken.wait(30)  # the helper holds one call before the caller goes on
        told(1.0)
        return i * i

    told = []
    try:
        assert in_chunks(work, 3, told.append, helpers=1) == [0, 1, 4]
    finally:
        release.set()
    assert len(stuck) == 1 and sum(told) == 3.0  # the stuck call's progress told once, by the caller


def test_an_error_in_a_helper_is_raised_to_the_caller():
    def work(i, told):
        if threading.current_thread() is not threading.main_thread():
            raise ValueError("bad batch")
        threading.Event().wait(0.2)  # leave the helper time to take a call
        return i

    with pytest.raises(ValueError, match="bad batch"):
        in_chunks(work, 6, helpers=1)


@pytest.mark.skipif(sys.platform != "linux", reason="a thread's priority is its own on Linux only")
def test_a_helper_runs_at_a_lower_priority():
    mine = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    def work(i, told):
        threading.Event().wait(0.01)  # long enough for both threads to take calls
        return threading.current_thread().name, os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    seen = dict(in_chunks(work, 40, helpers=1))
    assert seen[threading.main_thread().name] == mine
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == mine  # the caller's own is unchanged
    assert seen["spare-core-0"] == min(19, mine + spare_cores.HELPER_NICENESS)


def test_spare_cores_are_those_torch_leaves():
    threads = torch.get_num_threads()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    try:
        torch.set_num_threads(1)
        assert spare_cores.spare_cores() == cores - 1
        torch.set_num_threads(cores)
        assert spare_cores.spare_cores() == 0
    finally:
        torch.set_num_threads(threads)


def test_the_forecast_before_the_first_explanation_counts_an_idle_spare_core(default, monkeypatch):
    """Before any explanation the tab forecasts from one pass timed now: halved where a helper will find the other
    core idle (load average 0), not where the machine is busy (load average 5 on 2 cores)."""
    from bertviz_app.app.tabs import beyond

    run = default.run(SENTENCE)
    monkeypatch.setattr(beyond, "RATES", {})
    monkeypatch.setattr(beyond, "seconds_per_pass", lambda model, encoding: 0.1)
    monkeypatch.setattr(spare_cores, "spare_cores", lambda: 1)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    passes = beyond.explanation_passes(default, run, 50)
    said = {}
    for load in (0.0, 5.0):
        monkeypatch.setattr(os, "getloadavg", lambda load=load: (load, load, load))
        said[load] = beyond.explanation_forecast(default, run, 50)
    assert f"about **{passes * 0.1 / 2:.0f} s**" in said[0.0]
    assert f"about **{passes * 0.1:.0f} s**" in said[5.0]
