"""The shipped lessons (assets/lessons/): every fact a caption relies on holds for the shipped model, every lesson is
one the players read (views/js/lesson.mjs, run under node), and a fact that stops holding names its step."""

import json
import subprocess
from pathlib import Path

import pytest

import bertviz_app
from bertviz_app import lessons as course
from bertviz_app.lessons import FACT_KINDS, LESSONS, check_lesson, shipped_lessons

LESSON_JS = Path(bertviz_app.__file__).parent / "views" / "js" / "lesson.mjs"


@pytest.fixture(scope="module")
def explorer():
    return bertviz_app.load()


def test_at_least_eight_lessons_of_five_to_ten_steps_every_step_with_a_fact():
    lessons = shipped_lessons()
    assert len(lessons) >= 8
    for name, lesson in lessons.items():
        assert 5 <= len(lesson["steps"]) <= 10, name
        for n, step in enumerate(lesson["steps"], 1):
            assert step["caption"].strip() and step.get("facts"), f"{name} step {n}: a caption and its facts"
            assert {fact["kind"] for fact in step["facts"]} <= set(FACT_KINDS)
    # predict, then reveal: some steps ask first (their answers are checked below, with the facts)
    assert sum("question" in step for lesson in lessons.values() for step in lesson["steps"]) >= 3


@pytest.mark.real_weights
@pytest.mark.parametrize("name", sorted(shipped_lessons()))
def test_every_fact_of_every_shipped_lesson_holds(explorer, name):
    assert check_lesson(shipped_lessons()[name], explorer, name) == []


@pytest.mark.real_weights
def test_a_fact_that_no_longer_holds_names_its_step(explorer):
    lesson = json.loads((LESSONS / "08-when-the-model-is-wrong.json").read_text(encoding="utf-8"))
    lesson["steps"][1]["facts"] = [{"kind": "top1", "text": "He played the [MASK] in the band.", "word": "guitar"},
                                   {"kind": "strongest", "layer": 0, "head": 2, "token": 3, "to": 1},
                                   {"kind": "probability", "text": "He played the [MASK] in the band.", "word": "band",
                                    "max": 0.01}]
    problems = check_lesson(lesson, explorer, "lesson-8")
    assert len(problems) == 3 and all(p.startswith("lesson-8, step 2: ") for p in problems)
    assert "answers 'band' first, not 'guitar'" in problems[0]
    assert "looks most at token 2, not 1" in problems[1]
    assert "P('band')" in problems[2] and "not at most 0.01" in problems[2]


@pytest.mark.real_weights
def test_a_question_whose_answer_the_model_does_not_give_names_its_step(explorer, monkeypatch):
    lesson = json.loads((LESSONS / "05-heads-that-follow-grammar.json").read_text(encoding="utf-8"))
    assert check_lesson(lesson, explorer, "lesson-5") == []
    lesson["steps"][0]["question"]["answer"] = "small"  # 'the' looks most at 'dog' (0.65), then 'small' (0.24)
    lesson["steps"][3]["question"]["answer"] = "lamp"
    del lesson["steps"][2]["token"]
    lesson["steps"][2]["question"] = dict(lesson["steps"][3]["question"], answer="keys")
    assert check_lesson(lesson, explorer, "lesson-5") == [
        "lesson-5, step 1: the question's answer is 'small', but 'the' gives the most attention to 'dog'",
        "lesson-5, step 3: the question asks about the step's token, but the step has no layer, head and token",
        "lesson-5, step 4: the question's answer 'lamp' is not one of 2 to 5 different choices "
        "(['keys', 'cabinet', 'on', 'table'])"]
    # an answer that leads by less than the margin could be another token in a browser's 8-bit weights
    lesson = json.loads((LESSONS / "05-heads-that-follow-grammar.json").read_text(encoding="utf-8"))
    monkeypatch.setattr(course, "QUESTION_MARGIN", 0.5)
    assert check_lesson(lesson, explorer, "lesson-5") == [
        "lesson-5, step 1: the question's answer 'dog' leads the next token by 0.417, under 0.5: a browser's 8-bit "
        "weights might mark another"]


def test_the_players_read_every_shipped_lesson(tmp_path):
    script = tmp_path / "read.mjs"
    script.write_text(f"import {{ parseLesson }} from {json.dumps(LESSON_JS.as_uri())};\n"
                      "import {{ readFileSync }} from 'node:fs';\n".replace("{{", "{").replace("}}", "}")
                      + "for (const f of process.argv.slice(2)) { const l = parseLesson(readFileSync(f, 'utf8'));"
                      " console.log(JSON.stringify([l.title, l.steps.length])); }\n", encoding="utf-8")
    files = sorted(str(p) for p in LESSONS.glob("*.json"))
    out = subprocess.run(["node", str(script), *files], capture_output=True, text=True, check=True).stdout
    read = [json.loads(line) for line in out.splitlines()]
    lessons = shipped_lessons()
    assert read == [[lesson["title"], len(lesson["steps"])] for lesson in lessons.values()]
