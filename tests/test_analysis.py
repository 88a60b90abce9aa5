"""Invariants of the analyses, on three models: tiny (random), the shipped default, and a random 12 x 12."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

import bertviz_app
from bertviz_app import BertConfig, BertForPreTraining, Explorer, Tokenizer, analysis
from bertviz_app.catalog import minilm_path

TEXT_A = "The cat sat on the mat, and the cat was happy."
TEXT_B = "It was tired."


def random_explorer(config: BertConfig) -> Explorer:
    torch.manual_seed(0)
    tokenizer = Tokenizer.from_folder(minilm_path(), max_tokens=config.max_position_embeddings)
    return Explorer(BertForPreTraining(config), tokenizer, torch.device("cpu"), "random")


@pytest.fixture(scope="module")
def explorers():
    return {
        "tiny": random_explorer(BertConfig.preset("tiny", vocab_size=30522)),
        "default": bertviz_app.load(device="cpu"),
        "12x12": random_explorer(BertConfig(num_hidden_layers=12, num_attention_heads=12, hidden_size=96,
                                            intermediate_size=192)),
    }


@pytest.fixture(scope="module", params=["tiny", "default", "12x12"])
def run_and_explorer(request, explorers):
    explorer = explorers[request.param]
    return explorer.run(TEXT_A, TEXT_B), explorer


@pytest.fixture(scope="module")
def run(explorers):
    return explorers["default"].run(TEXT_A, TEXT_B)


def test_shapes_follow_the_config(run_and_explorer):
    run, explorer = run_and_explorer
    c = explorer.config
    L, h, T = c.num_hidden_layers, c.num_attention_heads, len(run)
    assert run.attention(0, 0).shape == (T, T) and run.attention(L - 1).shape == (T, T)
    assert run.rollout().shape == (T, T)
    stats = run.head_statistics()
    assert all(v.shape == (L, h) for v in stats.as_dict().values()) and stats.dominant.shape == (L, h)
    assert run.token_attention(L - 1, T - 1)[0].shape == (h, T)
    assert run.query_key(L - 1, h - 1, 0).keys.shape == (T, c.hidden_size // h)
    assert run.hidden_norms().shape == (L + 1, T) and run.layer_similarity().shape == (L, T)
    assert run.token_similarity(0).shape == (T, T)
    xy, explained = run.hidden_projection()
    assert xy.shape == (L + 1, T, 2) and explained.shape == (2,)
    assert len(run.embedding_parts()) == T and len(run.token_table()) == T
    assert len(run.attention_frame()) == L * h * T * T
    assert run.position_similarity(c.max_position_embeddings).shape == (c.max_position_embeddings,) * 2


def test_attention_rows_sum_to_one_over_unmasked_keys(run_and_explorer):
    run, _ = run_and_explorer
    mask = np.asarray(run.encoding.attention_mask, dtype=bool)
    # A Run keeps the model's float32 attention by default
    assert run.attentions.dtype == np.float32
    np.testing.assert_allclose(run.attentions[..., mask].astype(np.float64).sum(-1), 1.0, atol=1e-6)


def test_a_runs_bytes_count_what_it_holds_now(explorers):
    run = explorers["default"].run("Bytes counted once, and again when an array changes.")
    before, pooler = run.nbytes, run.pooler_output.nbytes
    assert run.nbytes == before  # counted once, then kept
    run.pooler_output = np.zeros(10_000, dtype=np.float32)
    assert run.nbytes == before - pooler + 40_000


def test_a_float16_cache_is_an_explicit_choice_and_says_so(explorers, tmp_path):
    default = explorers["default"]
    half = Explorer(default.model, default.tokenizer, default.device, "half", cache_dtype="float16")
    exact, small = default.run(TEXT_A, TEXT_B), half.run(TEXT_A, TEXT_B)
    assert small.attentions.dtype == np.float16 and "float16" in repr(half)
    # each weight within half a float16 step (2**-11 relative) of itself, so a row's sum within 2**-11
    np.testing.assert_allclose(small.attentions, exact.attentions, rtol=2**-11, atol=2**-24)
    np.testing.assert_allclose(small.attentions.astype(np.float64).sum(-1), 1.0, atol=2**-11)
    assert small.nbytes < exact.nbytes - exact.attentions.nbytes / 2 + 1
    for run, precision in ((exact, "float32"), (small, "float16")):
        back = pd.read_csv(run.attention_csv(tmp_path / f"{precision}.csv", layers=[0]), keep_default_na=False)
        assert set(back.precision) == {precision}
    with pytest.raises(ValueError, match="cache_dtype must be one of float32, float16"):
        Explorer(default.model, default.tokenizer, default.device, "bad", cache_dtype="bfloat16")


def test_rollout_rows_sum_to_one_and_follow_the_recipe(run_and_explorer):
    run, _ = run_and_explorer
    rollout = analysis.attention_rollout(run.attentions)
    np.testing.assert_allclose(rollout.sum(-1), 1.0, atol=1e-5)
    assert (rollout >= 0).all()
    # the first layer alone is 0.5 * mean head + 0.5 * I, rows renormalized
    expected = 0.5 * run.attentions[0].astype(np.float64).mean(0) + 0.5 * np.eye(len(run))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(rollout[0], expected, atol=1e-5)
    np.testing.assert_allclose(run.rollout(1), rollout[1], atol=1e-6)


def test_segment_blocks_reassemble_the_full_matrix(run):
    full = run.attention(2, 5)
    rebuilt = np.zeros_like(full)
    for which in ("A->A", "A->B", "B->A", "B->B"):
        rows, cols = analysis.segment_block(run.segment_ids, which)
        assert len(rows) and len(cols)
        assert (rebuilt[np.ix_(rows, cols)] == 0).all()  # blocks do not overlap
        rebuilt[np.ix_(rows, cols)] = full[np.ix_(rows, cols)]
    np.testing.assert_array_equal(rebuilt, full)
    rows, cols = analysis.segment_block(run.segment_ids, "A->B")
    assert set(run.segment_ids[rows]) == {0} and set(run.segment_ids[cols]) == {1}


def test_hiding_special_tokens_drops_them(run):
    rows, cols = analysis.segment_block(run.segment_ids, "all", ~run.special_mask)
    tokens = [run.tokens[i] for i in rows]
    assert "[CLS]" not in tokens and "[SEP]" not in tokens and len(rows) == len(run) - 3


def test_head_statistics_shares_lie_in_unit_interval(run_and_explorer):
    run, _ = run_and_explorer
    stats = run.head_statistics()
    for name in ("cls", "sep", "self", "previous", "next"):
        values = getattr(stats, name)
        assert ((values >= -1e-6) & (values <= 1 + 1e-6)).all(), name
    assert (stats.entropy >= 0).all() and (stats.entropy <= np.log(len(run)) + 1e-4).all()
    assert (stats.distance >= 0).all() and (stats.distance <= len(run) - 1).all()
    frame = stats.to_frame()
    assert list(frame.columns[:2]) == ["layer", "head"] and len(frame) == run.num_layers * run.num_heads


def test_head_statistics_recognize_synthetic_heads():
    t = 6
    previous = np.eye(t, k=-1)
    previous[0, 0] = 1.0  # the first token has no previous one: it attends to itself
    uniform = np.full((t, t), 1 / t)
    cls = np.zeros((t, t))
    cls[:, 0] = 1
    att = np.stack([previous, uniform, cls])[None]  # (1, 3, T, T)
    stats = analysis.head_statistics(att, [1, 0, 0, 0, 0, 1])
    assert list(stats.dominant[0]) == ["previous token", "broad", "[CLS]"]
    assert stats.previous[0, 0] == pytest.approx(1.0) and stats.cls[0, 2] == pytest.approx(1.0)
    assert stats.entropy[0, 1] == pytest.approx(np.log(t), rel=1e-5)
    assert stats.sep[0, 1] == pytest.approx(1 / t)  # one [SEP] at the end


def test_query_key_reproduces_the_attention_row(run_and_explorer):
    run, explorer = run_and_explorer
    L, h = run.num_layers, run.num_heads
    with torch.no_grad():  # the model's own attention, computed again
        exact = explorer.model.bert(torch.tensor([run.encoding.ids]), torch.tensor([run.encoding.segment_ids]),
                                    capture={"layer.*.attention.probs"}).layers("attention.probs")
    for layer, head, token in ((0, 0, 0), (L - 1, h - 1, len(run) - 1), (L // 2, h // 2, 3)):
        qk = run.query_key(layer, head, token)
        np.testing.assert_allclose(qk.weights, exact[layer][0, head, token].numpy(), atol=2e-6, rtol=1e-4)
        np.testing.assert_allclose(qk.weights, run.attentions[layer, head, token], atol=2e-6, rtol=1e-4)
        np.testing.assert_allclose(qk.products.sum(-1), qk.dots, rtol=1e-4, atol=1e-4)
        assert qk.scale == pytest.approx(1 / np.sqrt(explorer.config.hidden_size // h))


def test_embedding_parts_sum_exactly_to_the_pre_layernorm_embedding(explorers):
    explorer = explorers["default"]
    run = explorer.run(TEXT_A, TEXT_B)
    emb = explorer.model.bert.embeddings
    ids = torch.tensor([run.encoding.ids])
    types = torch.tensor([run.encoding.segment_ids])
    with torch.no_grad():
        pre = (emb.word_embeddings(ids) + emb.token_type_embeddings(types)
               + emb.position_embeddings(torch.arange(len(run))[None]))[0].numpy()
        np.testing.assert_allclose(emb.LayerNorm(torch.from_numpy(pre)).numpy(), run.hidden_states[0], atol=1e-5)
    parts = run.token_embeddings + run.segment_embeddings + run.position_embeddings
    np.testing.assert_array_equal(parts, pre)
    table = run.embedding_parts()
    np.testing.assert_allclose(table[["share_token", "share_segment", "share_position"]].sum(1), 1.0, atol=1e-9)
    np.testing.assert_allclose(table["norm_sum"], np.linalg.norm(pre, axis=-1), rtol=1e-5)
    np.testing.assert_allclose(table["norm_layernorm"], np.linalg.norm(run.hidden_states[0], axis=-1), rtol=1e-5)


def test_position_and_segment_tables(run, explorers):
    weight = explorers["default"].model.bert.embeddings.position_embeddings.weight.detach().numpy()
    sim = analysis.position_similarity(weight, 40)
    np.testing.assert_allclose(np.diag(sim), 1.0, atol=1e-5)
    np.testing.assert_allclose(sim, sim.T, atol=1e-6)
    np.testing.assert_allclose(run.position_similarity(40), sim, atol=1e-6)
    # without the model's tables, the Run falls back on its own T rows
    bare = dataclasses.replace(run, tables=None)
    assert bare.position_similarity().shape == (len(run), len(run))
    np.testing.assert_allclose(bare.position_similarity(5), sim[:5, :5], atol=1e-6)
    seg = run.segment_comparison()
    a, b = run.segment_embeddings[0], run.segment_embeddings[-1]
    assert seg["cosine"] == pytest.approx(float(a @ b / np.linalg.norm(a) / np.linalg.norm(b)), abs=1e-5)
    assert seg["norm_difference"] == pytest.approx(float(np.linalg.norm(b - a)), rel=1e-5)
    with pytest.raises(ValueError, match="from 1 to"):
        run.position_similarity(10_000)


def test_pca_matches_an_exact_svd():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((300, 120)) * np.linspace(5, 0.1, 120)  # clear leading directions
    coords, explained = analysis.pca_2d(x)
    centered = x - x.mean(0)
    u, s, _ = np.linalg.svd(centered, full_matrices=False)
    np.testing.assert_allclose(explained, s[:2] ** 2 / (s ** 2).sum(), rtol=1e-4)
    np.testing.assert_allclose(np.abs(coords), np.abs(u[:, :2] * s[:2]), rtol=1e-3, atol=1e-3)


def test_hidden_state_analyses(run):
    norms = run.hidden_norms()
    np.testing.assert_allclose(norms, np.linalg.norm(run.hidden_states, axis=-1), rtol=1e-5)
    sim = run.layer_similarity()
    assert (np.abs(sim) <= 1 + 1e-5).all()
    h0, h1 = run.hidden_states[0, 3], run.hidden_states[1, 3]
    assert sim[0, 3] == pytest.approx(float(h0 @ h1 / np.linalg.norm(h0) / np.linalg.norm(h1)), abs=1e-5)
    tok = run.token_similarity()
    np.testing.assert_allclose(np.diag(tok), 1.0, atol=1e-5)


def test_repeated_tokens_give_distinct_rows(run):
    positions = [i for i, t in enumerate(run.tokens) if t == "cat"]
    assert len(positions) == 2
    att = run.attention(1, 0)
    assert not np.allclose(att[positions[0]], att[positions[1]])
    table = run.token_table()
    assert list(table.loc[table.token == "cat", "position"]) == positions


def test_token_table(run):
    table = run.token_table()
    assert list(table.columns) == ["position", "token", "piece", "id", "segment", "start", "end", "text", "special"]
    assert table.special.sum() == 3 and table.segment.iloc[0] == "A" and table.segment.iloc[-1] == "B"
    row = table[table.token == "tired"].iloc[0]
    assert TEXT_B[row.start:row.end] == "tired" and row.text == "tired"


def test_attention_frame_and_csv(run, tmp_path):
    frame = run.attention_frame(layers=[1], heads=[2, 3])
    assert list(frame.columns) == ["layer", "head", "from", "to", "from_token", "to_token", "weight", "precision"]
    pick = frame[(frame["head"] == 3) & (frame["from"] == 2) & (frame.to == 5)]
    assert pick.weight.item() == pytest.approx(float(run.attentions[1, 3, 2, 5]))
    assert pick.from_token.item() == run.tokens[2]
    path = run.attention_csv(tmp_path / "att.csv", layers=[0])
    back = pd.read_csv(path, keep_default_na=False)
    assert len(back) == run.num_heads * len(run) ** 2
    np.testing.assert_allclose(back.groupby(["head", "from"]).weight.sum(), 1.0, atol=1e-6)
    np.testing.assert_array_equal(back.weight.to_numpy(np.float32), run.attentions[0].ravel())  # every digit kept
    assert set(back.precision) == {"float32"}
    rollout = run.attention_frame(layers=[2], matrix="rollout")
    assert set(rollout["head"]) == {"rollout"} and rollout.weight.to_numpy().reshape(len(run), -1).sum(-1) == (
        pytest.approx(1.0, abs=1e-5))
    norms = run.attention_frame(layers=[1], heads=[4], matrix="value_weighted")
    np.testing.assert_array_equal(norms.norm.to_numpy().reshape(len(run), -1), run.value_weighted_attention(1, 4))


@pytest.mark.parametrize("call, message", [
    (lambda r: r.attention(99, 0), "layer 99 is out of range"),
    (lambda r: r.attention(0, -1), "head -1 is out of range"),
    (lambda r: r.query_key(0, 0, 1000), "token 1000 is out of range"),
    (lambda r: r.plot.attention(0, 0, segments="A->C"), "unknown segment filter"),
    (lambda r: r.plot.head_map("beauty"), "unknown statistic"),
    (lambda r: r.token_similarity(1.5), "layer must be an integer"),
])
def test_bad_requests_raise_with_a_helpful_message(run, call, message):
    with pytest.raises(ValueError, match=message):
        call(run)


def _signed_reference(x):
    """PCA coordinates from a full SVD, with the documented sign convention applied."""
    u, s, _ = np.linalg.svd(x - x.mean(0), full_matrices=False)
    ref = u[:, :2] * s[:2]
    for c in range(2):
        if ref[np.argmax(np.abs(ref[:, c])), c] < 0:
            ref[:, c] = -ref[:, c]
    return ref, s[:2] ** 2 / (s ** 2).sum()


@pytest.mark.parametrize("shape", [(300, 40), (40, 300), (200, 150), (3, 5)])
def test_pca_matches_an_exact_svd_with_fixed_signs(shape):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape) * np.linspace(4, 0.2, shape[1])
    coords, explained = analysis.pca_2d(x)
    ref, ref_explained = _signed_reference(x)
    np.testing.assert_allclose(coords, ref, atol=1e-4 * np.abs(ref).max())
    np.testing.assert_allclose(explained, ref_explained, rtol=1e-5)
    again, _ = analysis.pca_2d(x)
    assert np.array_equal(coords, again)  # deterministic


def test_pca_runs_on_one_blas_thread_and_restores_the_count():
    from threadpoolctl import threadpool_info

    from bertviz_app.analysis import _threads

    def blas_threads():
        return [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]

    before = blas_threads()
    assert before, "numpy's BLAS was not found: the one-thread limit would do nothing"
    with _threads.single_threaded_blas():
        assert set(blas_threads()) == {1}
        with _threads.single_threaded_blas():  # re-entrant
            assert set(blas_threads()) == {1}
        assert set(blas_threads()) == {1}
    analysis.pca_2d(np.random.default_rng(0).standard_normal((50, 30)))
    assert blas_threads() == before


def test_position_path_ignores_vector_lengths():
    rng = np.random.default_rng(2)
    table = rng.standard_normal((30, 12))
    scaled = table * rng.uniform(0.1, 10, size=(30, 1))
    a, ea = analysis.position_path(table, 20)
    b, eb = analysis.position_path(scaled, 20)
    np.testing.assert_allclose(a, b, atol=1e-5)
    np.testing.assert_allclose(ea, eb, atol=1e-6)
    assert a.shape == (20, 2)
    with pytest.raises(ValueError, match="from 2 to 30"):
        analysis.position_path(table, 31)
