"""The catalogue of user-facing strings (views/js/catalog-es.mjs, read by bertviz_app/i18n.py): complete for every
string our JavaScript asks for by its English, the same placeholders in both languages, every shipped lesson in
Spanish with its tokens untouched, and the app's labels marked for gradio's translation. The page itself, in
Chromium with ?lang=es: tests/test_i18n_browser.py."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import gradio as gr
import numpy as np
import pytest

from bertviz_app import i18n, lessons
from bertviz_app.inputs import MAX_CHARS
from bertviz_app.app.common import language_of, say
from bertviz_app.app.server import gradio_internals

PACKAGE = Path(i18n.__file__).resolve().parent
# Our JavaScript, where each string a visitor reads is t("English", values) (tr() where `t` names something else)
JS_FOLDERS = [PACKAGE / "views" / "js", PACKAGE / "static" / "js", PACKAGE / "app" / "page"]
_LITERAL = r'"(?:[^"\\\n]|\\.)*"'
_CALL = re.compile(r"\b(?:t|tr)\(\s*(" + _LITERAL + r"(?:\s*\+\s*" + _LITERAL + r")*)\s*[,)]")


def js_strings(source: str) -> list[str]:
    """The English strings of every t("...") or tr("..." + "...") call in `source` whose first argument is literal
    (JSON reads a JavaScript string literal of ours: double quotes, \\u escapes)."""
    return ["".join(json.loads(part) for part in re.findall(_LITERAL, call.group(1)))
            for call in _CALL.finditer(source)]


def pages_catalogue(lang: str) -> dict[str, str]:
    """The catalogue as the pages' scripts carry it (i18n.for_pages: its server-only blocks left out)."""
    found = i18n._OBJECT.search(i18n.for_pages(i18n.CATALOGUE_FILES[lang].read_text(encoding="utf-8")))
    text = re.sub(r",\s*\}$", "}", i18n._COMMENT_LINE.sub("", found.group(1)))  # JavaScript allows the last comma
    return dict(json.loads(text))


def test_every_string_our_javascript_asks_for_is_in_the_catalogue_the_pages_carry():
    asked = {(path.name, text) for folder in JS_FOLDERS for path in sorted(folder.glob("*.*js"))
             for text in js_strings(path.read_text(encoding="utf-8"))}
    assert len(asked) > 150  # the extraction found the calls (a regex that matches nothing passes nothing)
    carried = pages_catalogue("es")
    missing = sorted(f"{name}: {text!r}" for name, text in asked if text not in carried)
    assert not missing, "not in views/js/catalog-es.mjs, or in a server-only block of it:\n" + "\n".join(missing)
    # the server-only blocks are left out, the rest kept whole
    full = i18n.catalogue("es")
    assert "Sentence A is empty: type a sentence (sentence B is optional)." in full
    assert "Sentence A is empty: type a sentence (sentence B is optional)." not in carried
    assert "links {relation}" in carried and all(full[k] == v for k, v in carried.items())
    assert 0 < len(full) - len(carried) < len(full) / 5


def test_the_extraction_reads_concatenations_and_escapes():
    source = 'x = t("Layer {layer}, " + "head"); y = tr("\\u2026 more", { n }); z = t(label);'
    assert js_strings(source) == ["Layer {layer}, head", "… more"]


@pytest.mark.parametrize("lang", i18n.LANGUAGES[1:])
def test_every_entry_has_a_translation_with_the_same_placeholders(lang):
    for english, translated in i18n.catalogue(lang).items():
        assert isinstance(translated, str) and translated.strip(), english
        assert i18n.placeholders(translated) == i18n.placeholders(english), english
    # each English string once: a second line for it (two branches adding the same word) would silently win
    keys = [k for k, _ in i18n.entries(lang)]
    assert sorted(k for k in set(keys) if keys.count(k) > 1) == []


def test_a_string_is_translated_with_its_values_and_a_missing_one_stays_english():
    assert i18n.translate("{n} tokens · forward pass {ms} ms on {device}", "es", n=12, ms=40, device="cpu") \
        == "12 tokens · pasada del modelo 40 ms en cpu"
    assert i18n.translate("Not in any catalogue {n}", "es", n=1) == "Not in any catalogue 1"
    assert i18n.translate("Analyze", "en") == "Analyze"
    assert i18n.translate("Analyze", "xx") == "Analyze"


def test_the_language_is_the_pages_then_the_browsers_then_english():
    assert i18n.choose_language("es", "en-US,en;q=0.9") == "es"
    assert i18n.choose_language("en", "es-ES,es;q=0.9") == "en"
    assert i18n.choose_language(None, "fr-FR,fr;q=0.9,es;q=0.8") == "es"
    assert i18n.choose_language("zz", "de-DE") == "en"
    request = SimpleNamespace(query_params={}, headers={"referer": "http://127.0.0.1:7860/?a=x&lang=es",
                                                         "accept-language": "en-US"})
    assert language_of(request) == "es"
    assert say(request, "{n} tokens", n=3) == "3 tokens"
    assert language_of(SimpleNamespace(query_params={"lang": "en"}, headers={"accept-language": "es"})) == "en"
    assert language_of(None) == "en"


def test_every_shipped_lesson_is_in_spanish_and_its_tokens_are_not_translated():
    for name, lesson in lessons.shipped_lessons().items():
        assert lesson["translations"]["es"]["title"].strip(), name
        assert lessons.lesson_card(name, lesson)["translations"]["es"]["title"] == lesson["translations"]["es"]["title"]
        for n, step in enumerate(lesson["steps"], 1):
            spanish = step["translations"]["es"]
            assert spanish["caption"].strip() and spanish["caption"] != step["caption"], (name, n)
            assert ("ask" in spanish) == ("question" in step), (name, n)
            # a word the English caption quotes from the step's input is token text: quoted the same in Spanish
            typed = f"{step['a']} {step.get('b', '')}".lower()
            for quoted in re.findall(r"'([^' ]+)'", step["caption"]):
                if re.search(rf"\b{re.escape(quoted.lower())}\b", typed):
                    assert f"'{quoted}'" in spanish["caption"], (name, n, quoted)


def test_the_apps_labels_are_marked_for_gradios_translation_and_others_stay():
    from gradio.i18n import I18nData

    with gr.Blocks() as demo:
        gr.HTML("<h1>Uncatalogued <span>see what BERT reads and computes, in one sentence or a pair</span></h1>")
        box = gr.Textbox(label="Sentence A", info="Not catalogued anywhere")
        button = gr.Button("Analyze")
        other = gr.Button("Not catalogued either")
        # a choice's label that names its value is translated; a choice that is its own label is data (a token)
        listed = gr.Dropdown([("tiny: 2 layers x 4 heads, hidden 32 (a quick check; learns little)", "tiny"),
                              "epoch"])
    known = i18n.catalogue("es")
    assert gradio_internals.translate_static_text(demo, known) == 4
    assert isinstance(box.label, I18nData) and box.label.key == "Sentence A"
    assert box.info == "Not catalogued anywhere"
    assert button.value == str(I18nData("Analyze")) and other.value == "Not catalogued either"
    assert listed.choices == [(str(I18nData("tiny: 2 layers x 4 heads, hidden 32 (a quick check; learns little)")),
                               "tiny"), ("epoch", "epoch")]
    html = next(b for b in demo.blocks.values() if isinstance(b, gr.HTML)).value
    key = "see what BERT reads and computes, in one sentence or a pair"
    assert html == f"<h1>Uncatalogued <span>{I18nData(key)}</span></h1>"


# --- what the server writes per request: the tabs' readings and the figures' titles, axes and legends -------------
# The Python that writes them, through a translator: tr("English {name}", name=value) (the figure builders and the
# tabs' views take one, `common.tr_of(request)` makes it), tr_of(request)("...") or say(request, "..."); and what the
# training lane writes for every page at once, Message("English {name}", name=value), which each page translates.
PY_FOLDERS = [PACKAGE / "figures", PACKAGE / "app" / "tabs", PACKAGE / "app", PACKAGE / "app" / "lane"]


def py_calls(source: str) -> list[tuple[int, object, list[str]]]:
    """(line, first argument node, keyword names) of every tr(...), tr_of(request)(...), say(request, ...) and
    Message(...) call."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func, args = node.func, list(node.args)
        if isinstance(func, ast.Name) and func.id == "say" and len(args) >= 2:
            args = args[1:]
        elif not ((isinstance(func, ast.Name) and func.id in ("tr", "Message"))
                  or (isinstance(func, ast.Call) and getattr(func.func, "id", None) == "tr_of")
                  or (isinstance(func, ast.Attribute) and func.attr == "tr")):
            continue
        if args:  # a call with **values names no keywords: None, not checked
            keywords = None if any(k.arg is None for k in node.keywords) else [k.arg for k in node.keywords]
            found.append((node.lineno, args[0], keywords))
    return found


def server_strings() -> dict[str, set[str]]:
    """English string -> where the server passes it to a translator ("figures/hidden.py:41"), literal ones only;
    a call whose string is an f-string fails here, since no catalogue could hold it."""
    import ast

    asked: dict[str, set[str]] = {}
    for folder in PY_FOLDERS:
        for path in sorted(folder.glob("*.py")):
            for line, first, keywords in py_calls(path.read_text(encoding="utf-8")):
                where = f"{path.relative_to(PACKAGE)}:{line}"
                assert not isinstance(first, ast.JoinedStr), f"{where}: an f-string given to the translator"
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    assert keywords is None or sorted(keywords) == sorted(set(i18n.placeholders(first.value))), \
                        f"{where}: {keywords} fill {first.value!r}"
                    asked.setdefault(first.value, set()).add(where)
    return asked


def server_names() -> set[str]:
    """The strings the server translates by name rather than as a literal: constants (a tab's sentence without a
    model head) and the words a figure's legend or a table's rows are keyed by."""
    from bertviz_app import attribution
    from bertviz_app.app.lane.training import STOPPED_BY
    from bertviz_app.app.tabs import beyond, compare, masked_lm, next_sentence, task, timeline
    from bertviz_app.heads import CLEAR_ROLES
    from bertviz_app.config import FIELD_WORDS
    from bertviz_app.figures import beyond as beyond_figures, masked_lm as masked_lm_figures

    del compare  # imported for its side: every tab module loads
    measures = attribution.attention_measures(np.zeros((1, 1, 2, 2)), np.zeros((1, 2, 1, 1)), 0)
    return {masked_lm.NO_MLM_HEAD, next_sentence.NO_NSP_HEAD, beyond.NO_TARGET, beyond_figures.RAISES,
            beyond_figures.LOWERS, "a run of words", "one word piece", "mask", "random", "kept",
            "attention on this input (total variation)", "weights (relative change)",
            "layer", "head", "change", "max_difference", "layer_b", "rank",
            *beyond.FAITHFULNESS_COLUMNS, *measures, *beyond_figures.CURVE_COLORS,
            *(name for _, name, _ in masked_lm_figures.CORRUPTION_KINDS), *FIELD_WORDS.values(), task.NO_TASK,
            task.EXPLAIN_HINT, " or ", timeline.NO_TIMELINE, "pretraining", "finetuning", "accuracy",
            "exact match", *STOPPED_BY.values(), "Stopped", "words", "examples",
            *(role for role in CLEAR_ROLES if not role.startswith("["))}


def test_every_string_the_server_translates_is_in_the_catalogue_with_its_placeholders():
    asked = server_strings()
    assert len(asked) > 150  # the extraction found the calls
    names = server_names()
    missing = sorted(f"{sorted(where)[0]}: {text!r}" for text, where in asked.items()
                     if text not in i18n.catalogue("es")) + sorted(f"(by name) {text!r}" for text in names
                                                                   if text not in i18n.catalogue("es"))
    assert not missing, "not in views/js/catalog-es.mjs (one line each):\n" + "\n".join(missing)


def test_the_extraction_reads_the_servers_calls():
    source = ('tr("A {n}", n=1); tr_of(request)("B " "C"); say(request, "D {x}", x=2); self.tr(NAME)\n'
              'other("E"); tr(f"F {n}"); tr("G {a}", **values); Message("H {m}", m=3)')
    calls = py_calls(source)
    assert [(getattr(first, "value", None), keywords) for _, first, keywords in calls] == \
        [("A {n}", ["n"]), ("B C", []), ("D {x}", ["x"]), (None, []), (None, []), ("G {a}", None), ("H {m}", ["m"])]


def test_a_figure_and_a_reading_in_spanish_keep_the_tokens():
    """The builders write in the translator they are given: Spanish titles and axes, the tokens as the model's."""
    from bertviz_app import figures

    norms = figures.hidden_norms_figure(np.ones((3, 2)), ["the", "cat"], tr=i18n.translator("es"))
    assert norms.layout.title.text.startswith("Cuánto mide")
    assert norms.layout.yaxis.ticktext == ("embeddings", "capa 1", "capa 2")
    assert norms.layout.xaxis.ticktext == ("the", "cat")
    english = figures.hidden_norms_figure(np.ones((3, 2)), ["the", "cat"])
    assert english.layout.yaxis.ticktext == ("embeddings", "layer 1", "layer 2")
    # hover labels too: the faithfulness bars' and curves'
    import pandas as pd

    es = i18n.translator("es")
    table = pd.DataFrame({"blank-out": [0.5]}, index=["attention"])
    bars = figures.faithfulness_figure(table, tr=es)
    assert bars.data[0].hovertemplate == "%{y} frente a blank-out: %{x:.2f}<extra></extra>".replace(
        "blank-out", es("blank-out"))
    assert figures.faithfulness_figure(table).data[0].hovertemplate == "%{y} vs blank-out: %{x:.2f}<extra></extra>"
    curve = {"attention": np.array([1.0, 0.5])}
    curves = figures.faithfulness_curves_figure(curve, curve, pd.DataFrame({"deletion": [0.1], "insertion": [0.2]},
                                                                           index=["attention"]), tr=es)
    assert curves.data[0].hovertemplate == f"{es('attention')}, %{{x}} tokens: %{{y:.3f}}<extra></extra>"


def test_the_training_tabs_write_in_the_visitors_language():
    """The Timeline tab's probe figure and the Pretrain tab's status, roles and refusal line, in Spanish; the roles
    named by the library ("broad") and the heads' numbers as they are."""
    import pandas as pd

    from bertviz_app.app.lane.training import Progress
    from bertviz_app.app.tabs import pretrain, trained
    from bertviz_app.figures.timeline import probe_timeline_figure
    from bertviz_app.timeline.probe_set import ProbeSet

    es = i18n.translator("es")
    frame = pd.DataFrame({"step": [0, 10, 0, 10], "target": "tag", "layer": [0, 0, 1, 1],
                          "accuracy": [0.2, 0.5, 0.3, 0.7], "majority": 0.25})
    figure = probe_timeline_figure(frame, "Brown", tr=es)
    title = figure.layout.title.text.replace("<br>", " ")  # wrapped for a phone
    assert title.startswith("Lo que sabía cada capa de la categoría gramatical")
    assert figure.layout.yaxis.title.text == "exactitud en validación" and figure.layout.xaxis.title.text == "paso"
    assert [trace.name for trace in figure.data] == ["embeddings (capa 0)", "capa 1", "siempre la clase más común"]
    assert probe_timeline_figure(frame).layout.yaxis.title.text == "held-out accuracy"
    probes = ProbeSet({"layers": 1, "hidden": 2, "source": "brown", "sentences": [{"text": "a", "label": None}] * 3},
                      np.zeros((3, 6), dtype=np.int32))  # the subtitle under the figure's title
    assert probes.describe(es) == "3 frases de validación (corpus Brown)"
    assert probes.describe() == "3 held-out sentences of the Brown corpus"
    assert pretrain.status_text(Progress(), es).startswith("Elige el texto")
    assert pretrain.roles_text([["previous token", "broad"]], es) == \
        " 1 de 2 cabezas tienen una función clara (más de la mitad de su atención en un sitio): capa 1, cabeza 1 " \
        "(token anterior)."
    assert "**No empezado.**" in trained.not_started("x", es)


def test_the_training_lanes_messages_are_english_until_a_page_translates_them():
    """The lane writes once for every page: a Message reads as its English (a log, a notebook, str()) and each page
    translates it with its visitor's translator, a Message among its values too; a copy keeps what it is."""
    import copy

    from bertviz_app.app.lane.training import STOPPED_BY, fetch_failed_words

    nothing = i18n.Message("{how} before the first epoch was complete: nothing was kept.", how=STOPPED_BY["limit"])
    assert nothing == "Stopped at the server's time limit before the first epoch was complete: nothing was kept."
    es = i18n.translator("es")
    assert i18n.said(nothing, es) == ("Parado en el límite de tiempo del servidor antes de completar la primera "
                                      "época: no se guardó nada.")
    assert i18n.said(copy.deepcopy(nothing), es) == i18n.said(nothing, es)
    assert i18n.said("train.csv line 3: no label", es) == "train.csv line 3: no label"  # the library's, as it is
    assert i18n.said(fetch_failed_words("wsj-pos"), es).startswith("No se pudieron descargar de internet los datos "
                                                                   "de la receta wsj-pos")
    # a page that still picks a model a newer one replaced is refused in its language, the names as they are
    from bertviz_app.app.tabs.trained import replaced_words

    gone = replaced_words("reviews.csv fine-tuned 10:31", "reviews.csv fine-tuned 11:02", 3)
    assert i18n.translate_message(gone, "es") == (
        "reviews.csv fine-tuned 10:31 ya no se ofrece: el servidor guarda los 3 últimos modelos ajustados en la "
        "aplicación, y reviews.csv fine-tuned 11:02 ocupó su lugar. Elige otro modelo de la lista (recarga la página "
        "para ver la lista tal como está ahora).")


def test_the_training_tabs_lists_and_why_off_are_translated_whole(tmp_path):
    """The data and texts offered, the model sizes and the sentence saying fine-tuning is off are built once for every
    page: each is translated whole in the page by gradio (i18n.page_catalogue), the names in it as they are."""
    from bertviz_app.app.lane.pretraining import PRETRAIN_PRESETS, pretrain_choices
    from bertviz_app.app.lane.training import TrainingSettings, data_choices

    (tmp_path / "reviews.csv").write_text("text,label\n", encoding="utf-8")
    (tmp_path / "book.txt").write_text("A sentence.\n", encoding="utf-8")
    data = data_choices([tmp_path / "reviews.csv"])
    texts = pretrain_choices([tmp_path / "book.txt"])
    whys = [TrainingSettings().why_off] + [TrainingSettings.for_server(host, host == "127.0.0.1", share, False,
                                                                       proxied=proxied).why_off
                                           for host, share, proxied in (("0.0.0.0", False, False),
                                                                        ("127.0.0.1", True, False),
                                                                        ("127.0.0.1", False, True))]
    shown = [c.label for c in data.values()] + [c.label for c in texts.values()] + [
        p.label for p in PRETRAIN_PRESETS.values()] + whys
    page = i18n.page_catalogue("es")
    assert [text for text in shown if text not in page or page[text] == text] == []
    assert page[data["reviews.csv"].label] == "reviews.csv (indicado al iniciar el servidor; clasificación de textos)"
    assert page[texts["book.txt"].label] == "book.txt (indicado al iniciar el servidor)"
    assert page[data["movie-reviews"].label].startswith("movie-reviews: los datos de polaridad de frases")
    assert page[whys[1]].startswith("El ajuste fino está desactivado en este servidor: escucha en 0.0.0.0, una ")

# --- the library's messages as the app shows them ------------------------------------------------------------------
def _refused(call) -> str:
    with pytest.raises((ValueError, TypeError)) as caught:
        call()
    return str(caught.value)


def _library_refusals(explorer, model_folder: str, folder: Path, monkeypatch) -> list[str]:
    """What the library says, raised by the real code on real bad input: the refusals a visitor can meet in the app
    (a sentence, a box, a [MASK], an answer to explain) and those of a model that cannot load or a device that is not
    there (the command line's, and the training tabs' when a trained model is offered)."""
    import shutil

    import torch

    from bertviz_app import checkpoint, device, targets
    from bertviz_app.app.common import text_value
    from bertviz_app.inputs import MAX_CHARS

    def app_box(value, what):  # the app's boxes refuse with the same words, the box named
        with pytest.raises(gr.Error) as caught:
            text_value(value, what)
        return str(caught.value.message)

    config = Path(model_folder) / "config.json"
    said = [_refused(lambda: explorer.run(" ", "b")),
            _refused(lambda: explorer.run("x" * (MAX_CHARS + 1))), _refused(lambda: explorer.run("a", "b" * 20_001)),
            _refused(lambda: explorer.run("a\x07b")), _refused(lambda: explorer.run("a\ud800")),
            _refused(lambda: explorer.run(5)), app_box("y" * (MAX_CHARS + 2), "The masked text"),
            app_box("\x1b", "The second sentence B"),
            _refused(lambda: explorer.fill_mask("no mask here")),
            _refused(lambda: explorer.fill_mask(" ".join(["[MASK]"] * 9), max_masks=8)),
            _refused(lambda: explorer.next_sentence("a sentence", "")),
            _refused(lambda: targets.resolve_target(explorer.model, explorer.tokenizer,
                                                    explorer.run("a [MASK] b").encoding, "mask", token="xqzzyv")),
            _refused(lambda: explorer.contrast(explorer.run("a [MASK] b"), "the", "the")),
            _refused(lambda: device.resolve_device("tpu"))]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    said.append(_refused(lambda: device.resolve_device("cuda")))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    said.append(_refused(lambda: device.resolve_device("cuda:3")))
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    said.append(_refused(lambda: device.resolve_device("mps")))
    # checkpoints that cannot load: missing, a file, no config, bad JSON, no object, no weights, a broken weight
    # file, a shard the index names that is not there
    places = {name: folder / name for name in ("missing", "file", "empty", "json", "list", "bare", "broken", "index")}
    places["file"].write_text("x")
    for name in ("empty", "json", "list", "bare", "broken", "index"):
        places[name].mkdir()
    places["json"].joinpath("config.json").write_text("{not json")
    places["list"].joinpath("config.json").write_text("[1]")
    for name in ("bare", "broken", "index"):
        shutil.copy(config, places[name] / "config.json")
    places["broken"].joinpath("model.safetensors").write_bytes(b"not a weight file" * 4)
    places["index"].joinpath("model.safetensors.index.json").write_text('{"weight_map": {"a": "model-1.safetensors"}}')
    said += [_refused(lambda: checkpoint.load_model(place)) for place in places.values()]
    return said


def test_the_librarys_refusals_reach_a_spanish_visitor_in_spanish(tiny_mlm_folder, tmp_path, monkeypatch):
    """Each refusal, filled with its values (a length, a path, a name), is found in the catalogue by its template and
    said in Spanish with the same values; a box's name in it is translated too."""
    import bertviz_app

    explorer = bertviz_app.load(tiny_mlm_folder, device="cpu")
    said = _library_refusals(explorer, tiny_mlm_folder, tmp_path, monkeypatch)
    assert len(set(said)) == len(said) == 25, said
    untranslated = [message for message in said if i18n.translate_message(message, "es") == message]
    assert not untranslated, "add each one's template to views/js/catalog-es.mjs:\n" + "\n".join(untranslated)
    spanish = {message: i18n.translate_message(message, "es") for message in said}
    long_box = next(m for m in said if m.startswith("The masked text has"))
    assert spanish[long_box] == (f"El texto con [MASK] tiene {MAX_CHARS + 2:,} caracteres; pega como máximo "
                                 f"{MAX_CHARS:,} (de todos modos, el modelo solo lee los primeros cientos de tokens).")
    missing = next(m for m in said if m.startswith("no checkpoint folder at"))
    assert str(tmp_path / "missing") in spanish[missing]  # the values as they are
    assert i18n.translate_message(missing, "en") == missing


def test_every_family_note_and_literal_refusal_of_the_app_is_in_the_catalogue():
    """The family notes (RoBERTa's missing segment B...) the tabs show by name, and every refuse("...") of app/: the
    wrapper of every handler (common.user_errors) translates them on their way to the page."""
    import ast

    from bertviz_app.family import NOTES

    notes = [line for family in NOTES.values() for line in family.lacks]
    literal = [node.args[0].value for path in sorted((PACKAGE / "app").rglob("*.py"))
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "refuse" and node.args
               and isinstance(node.args[0], ast.Constant)]
    assert len(notes) >= 15 and len(literal) > 8
    missing = [text for text in notes + literal if text not in i18n.catalogue("es")]
    assert not missing, "not in views/js/catalog-es.mjs:\n" + "\n".join(missing)


def test_a_handlers_refusal_is_in_the_visitors_language_and_an_uncatalogued_one_stays_english():
    from bertviz_app.app.common import user_errors
    from bertviz_app.inputs import check_text

    @user_errors
    def handler(text, problem=None, request=None):
        if problem:
            raise ValueError(problem)
        return check_text(text)

    spanish = SimpleNamespace(query_params={"lang": "es"}, headers={})
    with pytest.raises(gr.Error) as caught:
        handler("", request=spanish)
    assert caught.value.message == "La frase A está vacía: escribe una frase (la frase B es opcional)."
    with pytest.raises(gr.Error) as caught:
        handler("", request=SimpleNamespace(query_params={}, headers={"accept-language": "en"}))
    assert caught.value.message == "Sentence A is empty: type a sentence (sentence B is optional)."
    with pytest.raises(gr.Error) as caught:  # no catalogue holds it: English, never a failure
        handler("x", "a refusal no catalogue holds (42 tokens)", request=spanish)
    assert caught.value.message == "A refusal no catalogue holds (42 tokens)"
    # a short template cannot claim a sentence: "{n} tokens" is one, and this is not a count of tokens
    assert i18n.translate_message("the text has 3 tokens", "es") == "the text has 3 tokens"
    assert i18n.translate_message("unknown device 'tpu'; use auto, cpu or cuda", "es") == \
        "dispositivo desconocido 'tpu'; usa auto, cpu o cuda"
