"""What a served app holds at most, by default: one home for the numbers that the command line, the explorer and the
server share."""

# A Run of the default model weighs about 0.2 MB at 32 tokens and 55-61 MB at 512 (attention grows with the square of
# the length): 256 MB per model keeps hundreds of sentences, or the last few long documents.
CACHE_MB = 256
MAX_TOKENS = 256
# A session holds the page's component configuration, not the answers sent to it (gradio_internals keeps those out):
# 0.4 MB each measured by benchmarks/bench_security.py (1.9 MB at 256 tokens while it kept them), ~200 MB at most.
MAX_SESSIONS = 500
SESSION_MINUTES = 60
# New sessions one client address may hold: past this, that address's least recently used session goes, not anyone
# else's. A class behind one school address (or a --share tunnel, which arrives from 127.0.0.1) shares it.
SESSIONS_PER_ADDRESS = 100
MAX_QUEUE = 64
MAX_BODY_BYTES = 2**20  # the largest request the page sends is two full text boxes: 20,000 characters each, ~0.5 MB

# The views' server functions (query/key blob, offline page, CSV): outside gradio's queue, so they get a lane of
# their own: this many at once, this many more waiting (past that: "busy"), and this many per session per minute.
EXPORTS_AT_ONCE = 1
EXPORTS_WAITING = 8
EXPORTS_PER_MINUTE = 20
# One head of a 512-token input; all 12 heads of a layer up to 147 tokens (about 9 MB of CSV).
MAX_CSV_ROWS = 512 * 512

# Failed logins (with --auth), each counted over LOGIN_WINDOW_S: per client address (not for 127.0.0.1, where a
# --share tunnel and a proxy on this machine put every visitor), per user name, and for the whole server.
LOGIN_WINDOW_S = 300
LOGIN_FAILURES_PER_ADDRESS = 20
LOGIN_FAILURES_PER_NAME = 30
LOGIN_FAILURES_ALL = 100
