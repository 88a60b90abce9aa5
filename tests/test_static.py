"""The static page's model and folder without a browser: the exported ONNX graph under onnxruntime (CPU) against our
PyTorch model, the folder's contents, the runtime's pin, and the command line. The page itself: test_static_browser."""

from __future__ import annotations

import base64
import gzip
import json
import re

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch

import bertviz_app
from bertviz_app import cli
from bertviz_app.analysis import attention_rollout
from bertviz_app.checkpoint import load_model
from bertviz_app.static import ExportError, RuntimeMissing, export_onnx, export_static, runtime
from bertviz_app.static import onnx_export
from bertviz_app.static.onnx_export import OUTPUTS, WEIGHTS, score_term_names
from bertviz_app.views import SCORE_TERMS_MAX_VALUES
from bertviz_app.tokenizer import Tokenizer

ATOL_ATTENTION = 1e-4  # the bound; measured 2e-6 to 7e-6
ATOL_LOGITS = 1e-3  # logits are O(10): float32 sums over 384 or 1536 terms in another order
# Score terms are pre-softmax scores: 1e-5, or where they reach ~70 (the default model), where float32's step is
# 7.6e-6, 2e-6 of the input's largest term (measured at most 0.9e-6 of it: 4.6e-5 at 512 tokens).
ATOL_TERMS, RTOL_TERMS = 1e-5, 2e-6


def _reference(model, ids, segments, positions):
    with torch.no_grad():
        out = model(torch.tensor([ids]), torch.tensor([segments]), capture={
            "layer.*.attention.probs", "layer.*.attention.queries", "layer.*.attention.keys",
            "layer.*.attention.score.*"})
    stack = lambda point: torch.stack([x[0] for x in out.layers(point)]).numpy()  # noqa: E731
    # (L, h, n, T, T): each layer's terms in the model's order, beside its heads
    by_layer = np.stack([np.stack([t[0].numpy() for t in out.score_terms(i).values()], axis=1)
                         for i in range(model.config.num_hidden_layers)])
    return (stack("attention.probs"), out.prediction_logits[0, positions].numpy(),
            out.seq_relationship_logits[0].numpy(), stack("attention.queries"), stack("attention.keys"), by_layer)


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def _check_graph(path, model, tokenizer, inputs):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for a, b in inputs:
        enc = tokenizer.encode(a, b, max_tokens=model.config.max_position_embeddings)
        positions = [i for i, t in enumerate(enc.tokens) if t == "[MASK]"] or [0]
        feeds = {"input_ids": np.array([enc.ids]), "token_type_ids": np.array([enc.segment_ids]),
                 "mlm_positions": np.array(positions)}
        got = session.run(None, {**feeds, "with_score_terms": np.array(True)})
        want = _reference(model, enc.ids, enc.segment_ids, positions)
        assert got[0].shape == want[0].shape == (model.config.num_hidden_layers, model.config.num_attention_heads,
                                                 len(enc), len(enc))
        np.testing.assert_allclose(got[0], want[0], rtol=0, atol=ATOL_ATTENTION, err_msg=f"attention, {len(enc)}")
        np.testing.assert_allclose(got[1], want[1], rtol=0, atol=ATOL_LOGITS, err_msg="masked-LM logits")
        np.testing.assert_allclose(got[2], want[2], rtol=0, atol=ATOL_LOGITS, err_msg="next-sentence logits")
        np.testing.assert_allclose(got[3], want[3], rtol=0, atol=ATOL_LOGITS, err_msg="queries")
        np.testing.assert_allclose(got[4], want[4], rtol=0, atol=ATOL_LOGITS, err_msg="keys")
        np.testing.assert_allclose(got[5], attention_rollout(want[0]), rtol=0, atol=1e-5, err_msg="rollout")
        L, h, T = want[0].shape[:3]
        assert got[6].shape == want[5].shape == (L, h, len(score_term_names(model)), T, T)
        np.testing.assert_allclose(got[6], want[5], rtol=0, atol=max(ATOL_TERMS, RTOL_TERMS * np.abs(want[5]).max()),
                                   err_msg=f"score terms, {T}")
        # the terms are the scores: their sum's softmax is the graph's own attention (one input: no padding bias)
        np.testing.assert_allclose(_softmax(got[6].sum(axis=2)), got[0], rtol=0, atol=1e-5, err_msg="terms' softmax")
        # without asking, the graph computes no terms and gives the same other outputs
        plain = session.run(None, {**feeds, "with_score_terms": np.array(False)})
        assert plain[6].shape == (L, h, len(score_term_names(model)), 0, 0)
        for a, b, name in zip(plain[:6], got[:6], OUTPUTS):
            np.testing.assert_array_equal(a, b, err_msg=name)


def test_tiny_model_graph_matches_pytorch(tiny_mlm_folder, tmp_path):
    model, _ = load_model(tiny_mlm_folder)
    model.eval()
    # The graph stores weights as float16, as the shipped model's are; a random model's are rounded first, so that
    # graph and PyTorch compute the same function and the score terms are compared within ATOL_TERMS.
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())
    tokenizer = Tokenizer.from_folder(tiny_mlm_folder)
    path = export_onnx(model, tmp_path / "tiny.onnx")
    _check_graph(path, model, tokenizer, [("a", None), ("The cat sat on the [MASK].", "It was [MASK] tired."),
                                          ("word " * 60, "other " * 50)])


def _quantized_per_output_channel(model) -> int:
    """Round every matrix of `model` with at least onnx_export._HALF_MIN_ELEMENTS values as the int8 export does:
    one scale per output channel (a Linear's or an embedding's row), codes up to 127. How many were rounded."""
    count = 0
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2 and p.numel() >= onnx_export._HALF_MIN_ELEMENTS:
                peak = p.abs().amax(dim=1, keepdim=True)
                scale = torch.where(peak > 0, peak / 127, 1)  # the padding token's row is all 0
                p.copy_(torch.round(p / scale).clamp(-127, 127) * scale)
                count += 1
    return count


def test_int8_weights_are_codes_and_a_scale_per_output_channel(tiny_mlm_folder, tmp_path, monkeypatch):
    """Every matrix (a lower floor than the real one, so that the tiny model's 32 x 32 ones count) is stored as int8
    codes and float32 scales, turned back into float32 at the start of the graph: the graph then computes what
    PyTorch computes in float32 with those rounded weights. Scales along the wrong axis would round the rounded
    weights again, differently, and fail the comparison; so did onnxruntime's int8 arithmetic where the graph used
    DequantizeLinear (queries off by 2e-3)."""
    monkeypatch.setattr(onnx_export, "_HALF_MIN_ELEMENTS", 1024)
    model, _ = load_model(tiny_mlm_folder)
    model.eval()
    rounded = _quantized_per_output_channel(model)
    path = export_onnx(model, tmp_path / "tiny-int8.onnx", weights="int8")
    proto = onnx.load(str(path))
    codes = [i for i in proto.graph.initializer if i.data_type == onnx.TensorProto.INT8]
    assert len(codes) == rounded  # the MLM decoder is the word embeddings (tied: one parameter, one matrix)
    casts = [n for n in proto.graph.node if n.op_type == "Cast" and n.input[0].endswith("__i8")]
    assert sorted(n.input[0] for n in casts) == sorted(i.name for i in codes)
    # not DequantizeLinear, which onnxruntime fuses with the MatMul into arithmetic that is not float32
    assert not any(n.op_type in ("DequantizeLinear", "MatMulNBits", "MatMulInteger") for n in proto.graph.node)
    kinds = {i.name: onnx.TensorProto.DataType.Name(i.data_type) for i in proto.graph.initializer}
    # the scales stay float32 (the word embeddings' 30522 would count as large); any other large tensor is float16
    assert {kinds[i.name.replace("__i8", "__scale")] for i in codes} == {"FLOAT"}
    assert {kinds[i.name] for i in proto.graph.initializer if np.prod(i.dims) >= 1024
            and not i.name.endswith(("__i8", "__scale"))} <= {"FLOAT16"}
    _check_graph(path, model, Tokenizer.from_folder(tiny_mlm_folder),
                 [("The cat sat on the [MASK].", "It was [MASK] tired."), ("word " * 60, "other " * 50)])


def test_float32_weights_are_the_models_own(tiny_mlm_folder, tmp_path):
    model, _ = load_model(tiny_mlm_folder)  # random float32 weights, not rounded to float16 first
    model.eval()
    path = export_onnx(model, tmp_path / "tiny-f32.onnx", weights="float32")
    proto = onnx.load(str(path))
    assert {i.data_type for i in proto.graph.initializer} <= {onnx.TensorProto.FLOAT, onnx.TensorProto.INT64}
    _check_graph(path, model, Tokenizer.from_folder(tiny_mlm_folder), [("The cat sat on the [MASK].", "Yes.")])


def test_the_weights_options_are_the_exports_and_others_are_refused(tmp_path, capsys):
    _, commands = cli.build_parser()
    action = next(a for a in commands["export-static"]._actions if a.dest == "weights")
    assert tuple(action.choices) == WEIGHTS and action.default == WEIGHTS[0] == "float16"
    with pytest.raises(ExportError, match="weights 'int4' is not one of float16, float32, int8"):
        export_static(tmp_path / "site", None, None, "m", weights="int4")
    assert not (tmp_path / "site").exists()


@pytest.fixture(scope="module")
def explorer(default_explorer):
    return default_explorer


@pytest.fixture(scope="module")
def default_onnx(explorer, tmp_path_factory):
    return export_onnx(explorer.model, tmp_path_factory.mktemp("onnx") / "model.onnx")


@pytest.mark.real_weights
def test_default_model_graph_matches_pytorch_at_several_lengths(explorer, default_onnx):
    long_a = " ".join(["the quick brown fox jumps over the lazy dog"] * 40)
    _check_graph(default_onnx, explorer.model, explorer.tokenizer, [
        ("Hi.", None),  # 4 tokens
        ("The capital of France is [MASK].", "It is a [MASK] city."),  # a pair with two masks
        ("café naïve 中文 👍🏽 unaffable", "ΟΔΟΣ ΣΟΦΟΣ"),
        (long_a, long_a),  # truncated to 512: the longest the model takes
    ])


@pytest.mark.real_weights
def test_weights_are_stored_as_float16_and_computed_in_float32(default_onnx):
    proto = onnx.load(str(default_onnx))
    types = {onnx.TensorProto.DataType.Name(i.data_type) for i in proto.graph.initializer if np.prod(i.dims) >= 4096}
    assert types == {"FLOAT16"}  # never int8: quantized attention was off by 0.5
    casts = [n for n in proto.graph.node if n.op_type == "Cast" and n.input[0].endswith("__f16")]
    assert casts and all(next(a.i for a in n.attribute if a.name == "to") == onnx.TensorProto.FLOAT for n in casts)
    assert not any(n.op_type in ("QuantizeLinear", "DequantizeLinear", "MatMulInteger") for n in proto.graph.node)
    assert 40e6 < default_onnx.stat().st_size < 50e6  # 22.7 M parameters at two bytes each
    # the score terms add nodes, no weights: an If whose branches hold no initializer and weigh 14 kB in all
    gate = next(n for n in proto.graph.node if n.op_type == "If")
    assert [list(g.g.initializer) for g in gate.attribute] == [[], []]
    assert sum(g.g.ByteSize() for g in gate.attribute) < 50_000


def test_a_model_without_pretraining_heads_is_refused_in_words(tmp_path):
    model = bertviz_app.model.BertForPreTraining(bertviz_app.BertConfig.preset("tiny"), nsp_head=False)
    with pytest.raises(ExportError, match="needs both pretraining heads; this one lacks the next-sentence head"):
        export_onnx(model, tmp_path / "x.onnx")


def test_runtime_integrity_is_checked():
    with pytest.raises(RuntimeError, match="does not match its pinned sha512 integrity"):
        runtime._check(b"not the tarball")


def test_export_without_the_runtime_says_how_to_fetch_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(runtime, "RUNTIME_DIR", tmp_path / "missing")
    with pytest.raises(RuntimeMissing, match=r"python -m bertviz_app.static"):
        runtime.runtime_dir()
    assert cli.main(["export-static", str(tmp_path / "site")]) == 2
    err = capsys.readouterr().err
    assert "bertviz-app: error: onnxruntime-web 1.30.0 is not in the package yet" in err
    assert "Traceback" not in err
    assert not (tmp_path / "site").exists()  # refused before anything was written


def _part_bytes(folder, name, spec):
    data = b""
    for i in range(spec["parts"]):
        text = (folder / "data" / f"{name}-{i:02d}.js").read_text()
        match = re.fullmatch(rf'bertvizStatic\.part\("{name}",{i},"([A-Za-z0-9+/=]*)"\);\n', text)
        assert match, f"{name}-{i:02d}.js is not one part call"
        data += base64.b64decode(match.group(1))
    return data


@pytest.mark.real_weights
def test_the_folder_holds_page_runtime_model_and_tokenizer(explorer, default_site, default_onnx):
    folder = default_site  # conftest's export of the default model: the same call, made once for the session
    names = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert {"index.html", "views.js", "page.js", "runtime/ort.wasm.min.js", "runtime/LICENSE",
            "data/manifest.js"} <= names
    manifest = json.loads((folder / "data/manifest.js").read_text().removeprefix("window.bertvizManifest = ")
                          .removesuffix(";\n"))
    assert manifest["runtime"] == {"name": "onnxruntime-web", "version": runtime.VERSION, "license": "MIT"}
    assert manifest["model"] == {"name": "minilm-l6-mlm-nsp-en", "layers": 6, "heads": 12, "headSize": 32,
                                 "hidden": 384, "maxTokens": 512, "scoreTerms": ["q.k"], "scoreScale": 32 ** -0.5,
                                 "scoreTermsMaxValues": SCORE_TERMS_MAX_VALUES, "maxMasks": 20,  # the app's too
                                 "weights": "float16"}
    # each file twice, binary (fetched over http) and as parts (read from file://): the runtime's binary and glue,
    # and a graph equal to a fresh export
    files = manifest["files"]
    assert {k: v["path"] for k, v in files.items()} == {
        "model": "data/model.onnx", "wasm": "runtime/ort-wasm-simd-threaded.wasm",
        "glue": "runtime/ort-wasm-simd-threaded.mjs"}
    for key, name in (("wasm", "ort-wasm-simd-threaded.wasm"), ("glue", "ort-wasm-simd-threaded.mjs")):
        assert (_part_bytes(folder, key, files[key]) == (folder / files[key]["path"]).read_bytes()
                == (runtime.runtime_dir() / name).read_bytes())
    model = _part_bytes(folder, "model", files["model"])
    assert model == (folder / "data/model.onnx").read_bytes() == default_onnx.read_bytes()
    assert len(model) == files["model"]["bytes"]
    # precompressed copies of the large files a page over http reads, which decompress to them
    copies = {p.relative_to(folder).as_posix() for p in folder.rglob("*.gz")}
    assert copies == {f"{f}.gz" for f in ("data/model.onnx", "runtime/ort-wasm-simd-threaded.wasm", "views.js",
                                          "page.js", "data/manifest.js", "runtime/ort.wasm.min.js")}
    for copy in copies:
        assert gzip.decompress((folder / copy).read_bytes()) == (folder / copy.removesuffix(".gz")).read_bytes()
    brotli = pytest.importorskip("brotli")  # gradio's dependency: .br copies only where it is installed
    br = {p.relative_to(folder).as_posix() for p in folder.rglob("*.br")}
    # float16 weights hardly compress: brotli wins 0.4% over gzip there, not worth 42 MB of disk
    assert "runtime/ort-wasm-simd-threaded.wasm.br" in br and "data/model.onnx.br" not in br
    for copy in br:
        assert brotli.decompress((folder / copy).read_bytes()) == (folder / copy.removesuffix(".br")).read_bytes()
    # a version of each file's contents, which the page puts in the address it fetches
    assert len({v["version"] for v in files.values()}) == 3
    vocab = manifest["tokenizer"]["vocab"]
    assert len(vocab) == explorer.tokenizer.vocab_size and vocab[explorer.tokenizer.mask_token_id] == "[MASK]"
    assert manifest["tokenizer"]["lowercase"] is True and manifest["tokenizer"]["prefix"] == "##"
    # nothing in the page reaches outside its folder
    page = (folder / "index.html").read_text()
    assert not re.search(r"(src|href)=\"(https?:)?//", page)
    # the note on what needs the server says what works today: the project's source and `make app`, not a package
    # name the index does not have (anyone could publish one under it)
    assert "make app" in page and "pip install bertviz-app" not in page


@pytest.mark.real_weights
def test_command_line_writes_the_folder(tmp_path, capsys):
    assert cli.main(["export-static", str(tmp_path / "site"), "--model", "minilm-l6-mlm-nsp-en"]) == 0
    assert "wrote" in capsys.readouterr().out
    assert (tmp_path / "site" / "index.html").exists()
    assert cli.main(["export-static", str(tmp_path / "other"), "--model", "all-MiniLM-L6-v2"]) == 2
    assert "needs both pretraining heads" in capsys.readouterr().err
    assert not (tmp_path / "other").exists()


def test_the_page_names_every_file_inside_its_folder():
    """A host puts the folder anywhere (https://school.example/class/): the page declares its icon inline, so the
    browser does not ask the host's root for /favicon.ico, and names no file by an absolute or parent path."""
    import re

    from bertviz_app.static.site import index_html

    page = index_html("m", "A.", "")
    assert '<link rel="icon" href="data:,">' in page
    for ref in re.findall(r'(?:src|href)="([^"]*)"', page):
        assert ref.startswith("data:") or not (ref.startswith(("/", "..")) or "://" in ref), ref


def test_fetching_the_runtime_warns_of_nothing():
    """`make setup` ran `python -m bertviz_app.static.runtime`, which runpy warned may run twice (the package had
    imported it already)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", "bertviz_app.static"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "RuntimeWarning" not in done.stderr, done.stderr
    assert "onnxruntime-web" in done.stdout
