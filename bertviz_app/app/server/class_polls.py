"""Class polls: a lesson's question answered on the students' phones while the presenting page shows the tally.

The presenting page opens a poll for the question on screen and gets a secret key (its only handle: the tally and
closing need it, so no other visitor can see the counts, close or reveal) and a short code; the phones open
/p/CODE (a QR code of it is in the answer), see the question and its choices, and answer once. Nothing is written to
disk: a poll lives in this process while its step is open, is frozen when the page closes it (answers refused, the
counts kept for FROZEN_S so the page can show them), then forgotten; all of it goes with the server.

Routes (PollRoutes, ASGI middleware in front of gradio), each body at most MAX_BODY bytes:
  POST /poll/open {ask, choices, origin}  -> {key, code, address, qr}  (origin: the page's, for the QR's address)
  GET  /poll/tally?key=KEY               -> {counts, answers, open}
  POST /poll/close {key}                 -> {counts, answers, open: false}
  GET  /p/CODE                           -> the phone's page (assets/poll-phone.html); sets the phone's voter cookie
  GET  /poll/q/CODE                      -> {ask, choices, open}
  POST /poll/answer/CODE {choice}        -> {counted: true}; one answer per voter cookie, the first stands

Bounds: codes are CODE_LENGTH characters of a 31-letter alphabet (31**5 = 28.6 million codes) and at most
MAX_POLLS exist at once, so a guess finds one with odds of at most 16 in 28.6 million; every phone-side request
(page, question, answer) of an address takes a token from its bucket (BURST, then PER_SECOND), so a guesser from one
address needs about a day of guessing per poll found (28.6 million / 16 / 20 per second), while a poll lives for a
question's minutes; a flood from one address is refused after BURST. An
address may be given at most VOTERS_PER_ADDRESS voter cookies per poll (a class behind one address: up to that many
phones), a poll at most MAX_VOTERS; an answer is {"choice": N} and nothing else (no names: the tally is all that is
shared). Each refusal is one sentence with its status.
"""

from __future__ import annotations

import html
import json
import re
import secrets
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ...catalog import ASSETS
from ...styles import stylesheet
from .guards import ASGIApp, Receive, Scope, Send, answer, route_path

ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ2345679"  # 31: no 0 or O, 1 or I, 8 (read aloud or off a screen, confused)
CODE_LENGTH = 5
MAX_POLLS = 16
MAX_VOTERS = 500
VOTERS_PER_ADDRESS = 60
MAX_BODY = 2048
BURST = 150  # a class of 50 behind one address (NAT, a tunnel): a page, its question and an answer each
PER_SECOND = 20.0
ADDRESSES = 10_000  # addresses whose buckets are remembered; the oldest forgotten first
FROZEN_S = 600.0
MAX_ASK = 300
MAX_CHOICE = 80
MAX_CHOICES = 5
COOKIE = "bv_poll_voter"
PHONE_PAGE = ASSETS / "poll-phone.html"
_ORIGIN = re.compile(r"^https?://[A-Za-z0-9.\-\[\]:]{1,200}$")


class Refused(Exception):
    """A request the polls refuse: its status and one sentence."""

    def __init__(self, status: int, sentence: str):
        super().__init__(sentence)
        self.status = status


@dataclass
class Poll:
    code: str
    key: str
    ask: str
    choices: list[str]
    counts: list[int]
    opener: str  # the address of the page that opened it: a new poll from there replaces it
    voters: dict[str, int | None] = field(default_factory=dict)  # voter cookie -> the choice (None: not answered)
    per_address: dict[str, int] = field(default_factory=dict)  # voter cookies given to each address
    closed_at: float | None = None

    def view(self) -> dict:
        return {"counts": list(self.counts), "answers": sum(self.counts), "open": self.closed_at is None}


class ClassPolls:
    """The polls of one server, in memory. `clock`: time in seconds (tests pass their own)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self.clock = clock
        self._polls: dict[str, Poll] = {}  # code -> poll
        self._keys: dict[str, str] = {}  # key -> code
        self._buckets: dict[str, tuple[float, float]] = {}  # address -> (tokens, when counted)
        self._lock = threading.Lock()

    # -- the presenting page's side ------------------------------------------------------------------------------
    def open(self, value: object, address: str) -> dict:
        if not isinstance(value, dict) or set(value) - {"ask", "choices", "origin"}:
            raise Refused(400, "A poll is opened with its question: {ask, choices, origin}.")
        ask, choices, origin = value.get("ask"), value.get("choices"), value.get("origin")
        if not isinstance(ask, str) or not ask.strip() or len(ask) > MAX_ASK:
            raise Refused(400, f"A poll's question is text of 1 to {MAX_ASK} characters.")
        if (not isinstance(choices, list) or not 2 <= len(choices) <= MAX_CHOICES
                or not all(isinstance(c, str) and 0 < len(c) <= MAX_CHOICE for c in choices)):
            raise Refused(400, f"A poll has 2 to {MAX_CHOICES} choices, each text of at most {MAX_CHOICE} characters.")
        if not isinstance(origin, str) or not _ORIGIN.match(origin):
            raise Refused(400, "A poll needs the page's origin (http://host:port) to make the phones' address.")
        with self._lock:
            self._forget(lambda p: p.opener == address or self._expired(p))
            if len(self._polls) >= MAX_POLLS:
                raise Refused(503, f"{MAX_POLLS} polls are open on this server, the most it holds; close one first.")
            code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
            while code in self._polls:
                code = "".join(secrets.choice(ALPHABET) for _ in range(CODE_LENGTH))
            key = secrets.token_urlsafe(24)
            self._polls[code] = Poll(code, key, ask, list(choices), [0] * len(choices), address)
            self._keys[key] = code
        address_shown = f"{origin}/p/{code}"
        return {"key": key, "code": code, "address": address_shown, "qr": qr_data_uri(address_shown)}

    def tally(self, key: object) -> dict:
        with self._lock:
            return self._own(key).view()

    def close(self, key: object) -> dict:
        with self._lock:
            poll = self._own(key)
            if poll.closed_at is None:
                poll.closed_at = self.clock()
            return poll.view()

    # -- the phones' side ---------------------------------------------------------------------------------------
    def question(self, code: str, address: str) -> dict:
        with self._lock:
            self._spend(address)
            poll = self._find(code)
            return {"ask": poll.ask, "choices": list(poll.choices), "open": poll.closed_at is None}

    def new_voter(self, code: str, address: str) -> str:
        """A voter cookie for a phone that opens the poll's page."""
        with self._lock:
            self._spend(address)
            poll = self._find(code)
            self._open(poll)
            if len(poll.voters) >= MAX_VOTERS:
                raise Refused(503, f"This poll has taken its {MAX_VOTERS} phones, the most one poll takes.")
            if poll.per_address.get(address, 0) >= VOTERS_PER_ADDRESS:
                raise Refused(429, f"{VOTERS_PER_ADDRESS} phones from this address have joined this poll, the most "
                                   "one address may bring.")
            poll.per_address[address] = poll.per_address.get(address, 0) + 1
            voter = secrets.token_urlsafe(18)
            poll.voters[voter] = None
            return voter

    def answer(self, code: str, value: object, voter: str | None, address: str) -> dict:
        with self._lock:
            self._spend(address)
            poll = self._find(code)
            self._open(poll)
            if (not isinstance(value, dict) or set(value) != {"choice"} or type(value["choice"]) is not int
                    or not 0 <= value["choice"] < len(poll.choices)):
                raise Refused(400, f'An answer is {{"choice": N}} with N from 0 to {len(poll.choices) - 1}, and '
                                   "nothing else (no names: only the tally is shared).")
            if voter is None or voter not in poll.voters:
                raise Refused(403, "This phone has not joined the poll: open its address (or QR code) first.")
            if poll.voters[voter] is not None:
                raise Refused(409, "This phone has answered already; its first answer stands.")
            poll.voters[voter] = value["choice"]
            poll.counts[value["choice"]] += 1
            return {"counted": True}

    # -- inside ----------------------------------------------------------------------------------------------------
    def _expired(self, poll: Poll) -> bool:
        return poll.closed_at is not None and self.clock() - poll.closed_at > FROZEN_S

    def _forget(self, gone: Callable[[Poll], bool]) -> None:
        for poll in [p for p in self._polls.values() if gone(p)]:
            del self._polls[poll.code]
            del self._keys[poll.key]

    def _own(self, key: object) -> Poll:
        self._forget(self._expired)
        code = self._keys.get(key) if isinstance(key, str) else None
        if code is None:
            raise Refused(403, "Only the page that opened a poll can see its tally or close it; this key opens none.")
        return self._polls[code]

    def _find(self, code: str) -> Poll:
        self._forget(self._expired)
        poll = self._polls.get(code.upper())
        if poll is None:
            raise Refused(404, "There is no poll with this code: check the address on the teacher's screen.")
        return poll

    @staticmethod
    def _open(poll: Poll) -> None:
        if poll.closed_at is not None:
            raise Refused(410, "This poll is closed: the answer is on the teacher's screen.")

    def _spend(self, address: str) -> None:
        now = self.clock()
        tokens, then = self._buckets.pop(address, (BURST, now))
        tokens = min(BURST, tokens + (now - then) * PER_SECOND)
        self._buckets[address] = (tokens - 1 if tokens >= 1 else tokens, now)
        while len(self._buckets) > ADDRESSES:
            self._buckets.pop(next(iter(self._buckets)))
        if tokens < 1:
            raise Refused(429, "Too many requests from this address; wait a second and try again.")


def qr_data_uri(text: str) -> str:
    import segno  # only when a poll opens

    return segno.make(text, error="m").svg_data_uri(scale=6, border=2)


class PollRoutes:
    """The polls' routes (see the module's docstring) in front of gradio; every other request goes on."""

    def __init__(self, app: ASGIApp, polls: ClassPolls | None = None):
        self.app = app
        self.polls = polls or ClassPolls()
        self._page: bytes | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = route_path(scope) if scope["type"] == "http" else ""
        if not (path.startswith("/poll/") or path.startswith("/p/")):
            await self.app(scope, receive, send)
            return
        address = (scope.get("client") or ("?",))[0]
        try:
            await self._route(scope, receive, send, path, address)
        except Refused as refused:
            await answer(send, refused.status, {"error": str(refused)})

    async def _route(self, scope: Scope, receive: Receive, send: Send, path: str, address: str) -> None:
        method = scope["method"]
        parts = path.strip("/").split("/")
        if method == "GET" and len(parts) == 2 and parts[0] == "p":
            try:
                voter = self.polls.new_voter(parts[1], address)
            except Refused as refused:  # a phone shows the sentence as a page, not as JSON
                await self._phone_page(send, None, "", refused)
                return
            await self._phone_page(send, voter, parts[1].upper())
        elif method == "GET" and parts[:2] == ["poll", "q"] and len(parts) == 3:
            await answer(send, 200, self.polls.question(parts[2], address))
        elif method == "GET" and parts == ["poll", "tally"]:
            key = urllib.parse.parse_qs(scope.get("query_string", b"").decode("latin-1")).get("key", [None])[0]
            await answer(send, 200, self.polls.tally(key))
        elif method == "POST" and parts[:2] == ["poll", "answer"] and len(parts) == 3:
            value = await _json_body(receive)
            await answer(send, 200, self.polls.answer(parts[2], value, _cookie(scope, COOKIE), address))
        elif method == "POST" and parts == ["poll", "open"]:
            await answer(send, 200, self.polls.open(await _json_body(receive), address))
        elif method == "POST" and parts == ["poll", "close"]:
            value = await _json_body(receive)
            await answer(send, 200, self.polls.close(value.get("key") if isinstance(value, dict) else None))
        else:
            raise Refused(404, "There is no such poll address.")

    async def _phone_page(self, send: Send, voter: str | None, code: str, refused: Refused | None = None) -> None:
        """The phone's page for the poll `code` (letters of ALPHABET only) with its voter cookie, or the page that
        says why not (`refused`)."""
        if self._page is None:
            self._page = Path(PHONE_PAGE).read_text(encoding="utf-8").replace("{{STYLE}}", stylesheet("poll-phone.css"))
        said = html.escape(str(refused)) if refused else ""
        body = self._page.replace("{{CODE}}", code).replace("{{SAID}}", said).encode("utf-8")
        headers = [(b"content-type", b"text/html; charset=utf-8"), (b"content-length", str(len(body)).encode()),
                   (b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff"),
                   (b"content-security-policy",
                    b"default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'")]
        if voter:
            headers.append((b"set-cookie",
                            f"{COOKIE}={voter}; Path=/poll/answer/{code}; HttpOnly; SameSite=Strict".encode()))
        await send({"type": "http.response.start", "status": refused.status if refused else 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})


async def _json_body(receive: Receive) -> object:
    """The request's JSON, read no further than MAX_BODY bytes."""
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Refused(400, "The request ended before its body.")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise Refused(413, f"A poll's request is a few bytes of JSON; this one is over {MAX_BODY:,} bytes.")
        chunks.append(chunk)
        if not message.get("more_body"):
            break
    try:
        return json.loads(b"".join(chunks))
    except ValueError:
        raise Refused(400, 'A poll\'s request is JSON, such as {"choice": 1}.') from None


def _cookie(scope: Scope, name: str) -> str | None:
    for key, value in scope.get("headers", []):
        if key == b"cookie":
            for part in value.decode("latin-1").split(";"):
                k, _, v = part.strip().partition("=")
                if k == name:
                    return v
    return None
