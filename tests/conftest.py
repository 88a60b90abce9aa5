import contextlib
from pathlib import Path

import pytest
import torch

from bertviz_app import BertConfig
from bertviz_app.checkpoint import save_pretrained
from bertviz_app.catalog import minilm_path
from bertviz_app.model import BertForPreTraining
from bertviz_app.tokenizer import Tokenizer


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture(scope="session")
def hf():
    """transformers' BertForPreTraining on the default model, float32 and eager attention: the causal tests' oracle
    (read-only: their hooks are removed after each pass)."""
    import transformers

    from bertviz_app import catalog

    return transformers.BertForPreTraining.from_pretrained(catalog.default_model_path(), attn_implementation="eager",
                                                           dtype=torch.float32).eval()


@pytest.fixture
def tiny_config() -> BertConfig:
    return BertConfig.preset("tiny")


@pytest.fixture(scope="session")
def tiny_mlm_folder(tmp_path_factory) -> str:
    """A tiny random BertForPreTraining (MLM + NSP heads) with the default model's vocabulary, saved as a checkpoint
    folder: the app's masked-LM and next-sentence paths need a model that has the heads."""
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("tiny-mlm")
    model = BertForPreTraining(BertConfig.preset("tiny", vocab_size=30522, max_position_embeddings=128))
    save_pretrained(model, folder, tokenizer=Tokenizer.from_folder(minilm_path()))
    return str(folder)


def perturb_(model: torch.nn.Module, seed: int = 0) -> None:
    """Make every parameter distinctive: LayerNorm weights far from 1, every bias (and the MLM bias) far from 0, so
    that a LayerNorm or bias loaded into the wrong place, or not at all, cannot go unnoticed."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=gen)
            if "LayerNorm" in name and name.endswith("weight"):
                p.copy_(1.0 + 0.3 * noise)
            elif name.endswith("bias"):
                p.copy_(0.2 * noise)
            else:
                p.add_(0.02 * noise)


CHROMIUM = Path("/usr/bin/chromium")


# Every page the browser tests open has the first visit's tour offer (views/js/lesson-tour.mjs) dismissed already, as
# a returning visitor's browser has, so that no card floats over what a test clicks or photographs; the tour's own
# tests (test_tour_browser.py) open pages without it.
TOUR_DISMISSED = "try { localStorage.setItem('bertviz-tour', 'dismissed'); } catch (e) { /* about:blank */ }"


@contextlib.contextmanager
def chromium(profile: Path, first_visit: bool = False):
    """Debian's headless Chromium, driven by playwright (no `playwright install`), with the fresh profile `profile`:
    a persistent context at 1280 x 720 that takes downloads; unless `first_visit`, the tour already dismissed."""
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `make test` installs Debian's chromium (scripts/system_packages.sh)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (the test extra)")
    with sync_api.sync_playwright() as pw:
        context = pw.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), headless=True,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run"],
            viewport={"width": 1280, "height": 720}, accept_downloads=True)
        if not first_visit:
            context.add_init_script(TOUR_DISMISSED)
        try:
            yield context
        finally:
            context.close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """chromium(): one per module: playwright's sync API runs one event loop at a time, so a module's tests open pages
    of this one."""
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context


DEFAULT_MODEL = "minilm-l6-mlm-nsp-en"


@pytest.fixture(scope="session")
def serve_app():
    """serve_app(*models, max_tokens=None, **options): the app offering `app.load_models(models)` on the CPU, built
    with `app.build_demo`'s `options`, served on a free 127.0.0.1 port (a pages.Served: url, demo, explorers). One
    server per distinct configuration for the whole session: the modules that ask for the same one share its models
    and its server, which no test changes (a visitor's state lives in the visitor's session). A module whose tests
    change what the server holds (start a training, run a poll, patch a limit) serves its own with pages.serving."""
    from bertviz_app import app
    from pages import serving

    servers = {}
    with contextlib.ExitStack() as stack:
        def serve(*models, max_tokens: int | None = None, **options):
            key = (tuple(map(str, models)), max_tokens, tuple(sorted(options.items())))
            if key not in servers:
                explorers = app.load_models(list(models), device="cpu", max_tokens=max_tokens)
                servers[key] = stack.enter_context(serving(explorers, **options))
            return servers[key]

        yield serve


@pytest.fixture(scope="session")
def default_explorer():
    """The default model on the CPU, loaded once for the modules that read it without changing it."""
    import bertviz_app

    return bertviz_app.load(device="cpu")


@pytest.fixture(scope="session")
def default_site(default_explorer, tmp_path_factory) -> Path:
    """The default model's static page, exported once (about a minute on two shared cores) for the modules that
    serve or open it without writing to it."""
    return default_explorer.export_static(tmp_path_factory.mktemp("static") / "site")


@pytest.fixture(scope="session")
def small_corpus(tmp_path_factory, tiny_mlm_folder) -> Path:
    """corpus_fixture's small corpus of the tiny model, built once for the modules that open it (none writes to it)."""
    from corpus_fixture import build_small_corpus

    return build_small_corpus(tmp_path_factory.mktemp("corpus") / "small", tiny_mlm_folder)


SENTIMENT = {"positive": ["a good film", "a great movie", "the film was good", "good and fine", "a fine movie",
                          "great film", "the movie was great", "it was good", "good good movie", "a great great film"],
             "negative": ["a bad film", "an awful movie", "the film was bad", "bad and boring", "a boring movie",
                          "awful film", "the movie was awful", "it was bad", "bad bad movie", "a boring boring film"]}


@pytest.fixture(scope="session")
def finetuned_classifier(tmp_path_factory) -> Path:
    """A tiny random pretraining checkpoint with a vocabulary of these sentences' words, fine-tuned with our own
    finetune() on them (40 labelled sentences, about 2 s): a real fine-tuned folder whose metrics.json names the
    base and which wrote heldout_predictions.jsonl. (A tiny model with the 30,522-piece vocabulary does not learn
    this in seconds.)"""
    from bertviz_app.finetuning import finetune

    root = tmp_path_factory.mktemp("finetuned")
    words = sorted({w for texts in SENTIMENT.values() for text in texts for w in text.split()})
    (root / "base").mkdir()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<", ">", "/", *words]
    (root / "base" / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = Tokenizer.from_vocab(root / "base" / "vocab.txt")
    torch.manual_seed(0)
    save_pretrained(BertForPreTraining(BertConfig.preset("tiny", vocab_size=tokenizer.vocab_size)), root / "base",
                    tokenizer=tokenizer)
    rows = [f"{text},{label}" for label, texts in SENTIMENT.items() for text in texts] * 2
    (root / "train.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    # timeline=10: the folder carries a short training timeline, as the app's fine-tuned models do
    return finetune("text-classification", root / "train.csv", root / "model", model=root / "base", epochs=6,
                    batch_size=4, learning_rate=5e-3, max_length=32, device="cpu", progress=False,
                    say=lambda *a: None, timeline=10).output
