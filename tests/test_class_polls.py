"""Class polls (app/server/class_polls.py) over HTTP, in front of a stand-in app: a phone joins, answers once and
is counted; the hostile cases each get a bounded refusal in one sentence (a guessed code, a forged key asking for the
tally or closing, an answer to a closed poll, 1,000 answers from one address, a 1 MB answer, HTML in a nickname, a
malformed answer, too many polls); a closed poll is frozen, then forgotten."""

from __future__ import annotations

import json
import urllib.parse

import pytest
from starlette.testclient import TestClient

from bertviz_app.app.server import class_polls
from bertviz_app.app.server.class_polls import ClassPolls, PollRoutes

QUESTION = {"ask": "Which token does 'sat' look at most?", "choices": ["the", "cat", "on"],
            "origin": "http://192.168.1.20:7860"}


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


async def gradio(scope, receive, send):
    """The app behind the polls: anything that reaches it says so."""
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": b"gradio"})


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def client(clock):
    return TestClient(PollRoutes(gradio, ClassPolls(clock)))


def opened(client, question=QUESTION) -> dict:
    r = client.post("/poll/open", json=question)
    assert r.status_code == 200, r.text
    return r.json()


def phone(client, code: str) -> TestClient:
    """A phone that opened the poll's page: it holds its voter cookie."""
    r = client.get(f"/p/{code}")
    assert r.status_code == 200 and "text/html" in r.headers["content-type"], r.text
    client.cookies.clear()  # each phone sends its own cookie below, the client's jar none
    return r.cookies[class_polls.COOKIE]


def voter_cookie(voter: str) -> dict:
    return {"cookie": f"{class_polls.COOKIE}={voter}"}


def answered(client, code, choice, voter):
    return client.post(f"/poll/answer/{code}", json={"choice": choice}, headers=voter_cookie(voter))


def refused(response, status: int, words: str) -> None:
    assert response.status_code == status, response.text
    if "text/html" in response.headers["content-type"]:  # the phone's page, saying it
        assert class_polls.COOKIE not in response.headers.get("set-cookie", "")
        sentence = response.text.split('<p id="said" role="status">', 1)[1].split("</p>", 1)[0]
    else:
        sentence = response.json()["error"]
    assert words in sentence and sentence.count(". ") == 0 and sentence.endswith("."), sentence


def test_phones_answer_once_and_only_the_presenting_page_sees_the_tally(client):
    poll = opened(client)
    assert len(poll["code"]) == 5 and set(poll["code"]) <= set(class_polls.ALPHABET)
    assert poll["address"] == f"http://192.168.1.20:7860/p/{poll['code']}"
    qr = urllib.parse.unquote(poll["qr"])
    assert qr.startswith("data:image/svg+xml") and "<svg" in qr
    voters = [phone(client, poll["code"]) for _ in range(5)]
    page = client.get(f"/p/{poll['code'].lower()}")  # a code typed in lower case opens the poll too
    client.cookies.clear()
    assert poll["code"] in page.text and "{{CODE}}" not in page.text
    assert client.get(f"/poll/q/{poll['code']}").json() == {"ask": QUESTION["ask"], "choices": QUESTION["choices"],
                                                            "open": True}
    for voter, choice in zip(voters, [1, 1, 0, 2, 1]):
        assert answered(client, poll["code"], choice, voter).json() == {"counted": True}
    # a second answer from a phone changes nothing
    refused(answered(client, poll["code"], 0, voters[0]), 409, "its first answer stands")
    assert client.get(f"/poll/tally?key={poll['key']}").json() == {"counts": [1, 3, 1], "answers": 5, "open": True}
    assert client.get("/anything-else").text == "gradio"


def test_a_guessed_code_or_a_forged_key_gets_a_sentence_and_nothing_else(client):
    poll = opened(client)
    guess = "AAAAA" if poll["code"] != "AAAAA" else "BBBBB"
    refused(client.get(f"/p/{guess}"), 404, "There is no poll with this code")
    assert "<script" not in client.get("/p/<script>alert(1)").text.split("<body>")[1].split("<script>")[0]
    refused(client.get(f"/poll/q/{guess}"), 404, "There is no poll with this code")
    refused(client.get("/poll/tally?key=forged"), 403, "Only the page that opened a poll")
    refused(client.get(f"/poll/tally?key={poll['code']}"), 403, "Only the page that opened a poll")
    refused(client.post("/poll/close", json={"key": "forged"}), 403, "Only the page that opened a poll")
    refused(client.post("/poll/close", json={"key": ["a"]}), 403, "Only the page that opened a poll")
    # the forged reveal closed nothing
    voter = phone(client, poll["code"])
    assert answered(client, poll["code"], 2, voter).status_code == 200
    refused(client.get("/poll/elsewhere"), 404, "There is no such poll address")


def test_a_closed_poll_refuses_answers_keeps_its_tally_frozen_then_is_gone(client, clock):
    poll = opened(client)
    voters = [phone(client, poll["code"]) for _ in range(3)]
    answered(client, poll["code"], 0, voters[0])
    assert client.post("/poll/close", json={"key": poll["key"]}).json() == {"counts": [1, 0, 0], "answers": 1,
                                                                          "open": False}
    refused(answered(client, poll["code"], 1, voters[1]), 410, "This poll is closed")
    refused(client.get(f"/p/{poll['code']}"), 410, "This poll is closed")
    assert client.get(f"/poll/q/{poll['code']}").json()["open"] is False
    assert client.get(f"/poll/tally?key={poll['key']}").json()["counts"] == [1, 0, 0]
    clock.now += class_polls.FROZEN_S + 1
    refused(client.get(f"/poll/tally?key={poll['key']}"), 403, "this key opens none")
    refused(client.get(f"/poll/q/{poll['code']}"), 404, "There is no poll with this code")


def test_a_thousand_answers_from_one_address_move_the_tally_by_one(client, clock):
    poll = opened(client)
    voter = phone(client, poll["code"])
    statuses = [answered(client, poll["code"], 1, voter).status_code for _ in range(1000)]
    assert statuses[0] == 200 and set(statuses[1:]) == {409, 429}
    assert statuses.count(429) >= 1000 - class_polls.BURST
    refused(answered(client, poll["code"], 1, voter), 429, "Too many requests from this address")
    # and new phones from that address: at most VOTERS_PER_ADDRESS, however slowly they come
    joined = 1
    for _ in range(200):
        clock.now += 1
        if client.get(f"/p/{poll['code']}").status_code == 200:
            joined += 1
        client.cookies.clear()
    assert joined == class_polls.VOTERS_PER_ADDRESS
    clock.now += 1
    refused(client.get(f"/p/{poll['code']}"), 429, "the most one address may bring")
    assert client.get(f"/poll/tally?key={poll['key']}").json()["answers"] == 1


def test_an_oversized_or_malformed_answer_or_a_nickname_is_refused_in_a_sentence(client):
    poll = opened(client)
    voter = phone(client, poll["code"])
    url = f"/poll/answer/{poll['code']}"
    cookies = voter_cookie(voter)
    big = client.post(url, content=json.dumps({"choice": 1, "pad": "x" * (1 << 20)}),
                      headers={"content-type": "application/json", **cookies})
    refused(big, 413, "over 2,048 bytes")
    for body in [{"choice": 1, "nickname": "<img src=x onerror=alert(1)>"}, {"choice": "1"}, {"choice": 3},
                 {"choice": True}, {"choice": 1.0}, [1], {}]:
        refused(client.post(url, json=body, headers=cookies), 400, 'An answer is {"choice": N} with N from 0 to 2')
    refused(client.post(url, content=b"{not json", headers=cookies), 400, "is JSON")
    refused(client.post(url, json={"choice": 1}), 403, "This phone has not joined the poll")
    refused(client.post(url, json={"choice": 1}, headers=voter_cookie("made-up")), 403, "has not joined")
    assert client.get(f"/poll/tally?key={poll['key']}").json()["answers"] == 0
    assert answered(client, poll["code"], 2, voter).status_code == 200  # the phone can still answer properly


def test_opening_is_bounded_and_one_page_holds_one_poll(clock):
    polls = ClassPolls(clock)
    for bad, words in [({"ask": "", "choices": ["a", "b"], "origin": "http://h"}, "question is text"),
                       ({**QUESTION, "choices": ["a"]}, "2 to 5 choices"),
                       ({**QUESTION, "origin": "javascript:alert(1)"}, "origin"),
                       ({**QUESTION, "script": "x"}, "opened with its question")]:
        with pytest.raises(class_polls.Refused, match=words):
            polls.open(bad, "10.0.0.1")
    first = polls.open(QUESTION, "10.0.0.1")
    polls.open(QUESTION, "10.0.0.1")  # the same page's next question replaces its poll
    with pytest.raises(class_polls.Refused, match="this key opens none"):
        polls.tally(first["key"])
    for n in range(class_polls.MAX_POLLS - 1):
        polls.open(QUESTION, f"10.0.1.{n}")
    with pytest.raises(class_polls.Refused, match="16 polls are open") as refusal:
        polls.open(QUESTION, "10.0.2.1")
    assert refusal.value.status == 503
