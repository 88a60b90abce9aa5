"""What a served app holds at most, by default: one home for the numbers that the command line, the explorer and the
server share."""

# A Run of the default model weighs 1.5 MB at 32 tokens, 30 MB at 256 and 98 MB at 512 in float32 (attention grows
# with the square of the length; benchmarks/bench_cache.py): 256 MB per model keeps 168 sentences, or the last two
# long documents.
CACHE_MB = 256
# float32, the model's own numbers: float16 attention would fit 10% more 32-token Runs in CACHE_MB (186 against 168),
# 30% more at 128 tokens (33 against 25), 2x only at 512 (4 against 2): a class's sentences gain little from it.
CACHE_DTYPE = "float32"
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
EXPORTS_PER_ADDRESS = 100  # a minute, for all the sessions of one client address
# A call past these rates is answered after a pause of this many seconds (at most), not at once (views_host.ExportLane)
REFUSAL_PAUSE_S = 5
# The Corpus tab's server functions (a subset's summary, a head's map), in a lane of their own: a map is computed
# once and then served from memory, so a class opening one head at once waits in line, not on the CPU.
CORPUS_AT_ONCE = 2
CORPUS_WAITING = 96
CORPUS_PER_MINUTE = 120
# A search's float32 unit vectors of the layers searched lately, per corpus (corpus/browser.py): 10,000 Brown sentences
# take 414 MB a layer (4 layers fit), 50,000 take 1.95 GB (1 fits); a layer past it is read a chunk at a time.
CORPUS_SEARCH_CACHE_BYTES = 2 * 2**30
CORPUS_PER_ADDRESS = 1200  # a class of 30 behind one address opening the tab asks ~10 each
# Searches by meaning, in a lane of their own beside it (each reads every token's state at one layer: 0.3-0.95 s of
# CPU at 1.27M tokens), so that answers already made never wait behind them: one at a time, a few waiting, fewer a
# minute per page and per address; a search asked before is answered from a bounded cache (corpus/browser.py).
CORPUS_SEARCHES_AT_ONCE = 1
CORPUS_SEARCHES_WAITING = 8
CORPUS_SEARCHES_PER_MINUTE = 30
CORPUS_SEARCHES_PER_ADDRESS = 120
# Probes ("What each layer knows"), in a third lane: the first of a target trains two regressions per layer (a minute
# or more on 2 cores), then every visitor gets the kept answer; one trains at a time, so the other lanes keep a core.
CORPUS_PROBES_AT_ONCE = 1
CORPUS_PROBES_WAITING = 8
CORPUS_PROBES_PER_MINUTE = 20
CORPUS_PROBES_PER_ADDRESS = 120
# One head of a 512-token input; all 12 heads of a layer up to 147 tokens (about 9 MB of CSV).
MAX_CSV_ROWS = 512 * 512

# Failed logins (with --auth), each counted over LOGIN_WINDOW_S: per client address (not for 127.0.0.1, where a
# --share tunnel and a proxy on this machine put every visitor), per user name, and for the whole server.
LOGIN_WINDOW_S = 300
LOGIN_FAILURES_PER_ADDRESS = 20
LOGIN_FAILURES_PER_NAME = 30
LOGIN_FAILURES_ALL = 100
# The served model's CPU work: one PyTorch thread per forward pass, two passes at once. With two busy processes beside
# the server on two cores, a new 32-token input took 98-100 ms on one thread against 1.3-1.4 s on two (OpenMP threads
# that outnumber free cores spin against each other); 50 visitors x 3 new inputs at once had a p95 of 3.5-4.7 s with
# two passes at once against 6.2-7.1 s with one, and 4.6-5.1 s with four (benchmarks/bench_app.py; docs/speed.md).
THREADS = 1
CONCURRENCY = 2
# Analyses (the analyze event) under way at once. Their forward passes are batched: CONCURRENCY passes at once, each
# taking every new input that waits for it (Explorer.forward_passes), so more analyses than passes under way is what
# lets a class's inputs share passes.
ANALYSES_AT_ONCE = 8
# [MASK]s one fill-mask reads, in the app and in the static page alike
MAX_MASKS = 20

# The Fine-tune tab (on a server others can reach): trainings one page, and one client address, may start in an
# hour. One training runs at a time; a short one of the default model takes 3-5 minutes on two cores (README), so
# an hour holds about a dozen: one page may start a few (a first try, another learning rate, a repeat), one address
# (a class behind a school's network, or a --share tunnel, where every visitor is 127.0.0.1) about what the lane
# can run in that hour, so that no one visitor can keep it from the others.
# One budget for the lane, whatever the kind of training (pretraining and fine-tuning share it), in starts and in the
# minutes the lane was held: four 15-minute pretrainings from one page held it for the whole hour.
TRAINING_WINDOW_S = 3600
TRAININGS_PER_SESSION = 4
TRAININGS_PER_ADDRESS = 12
TRAINING_MINUTES_PER_SESSION = 30
TRAINING_MINUTES_PER_ADDRESS = 45
# One training's length, for every page (`--max-training-minutes`; 0: no bound): stopped as Cancel stops it, the best
# complete epoch kept. Movie-reviews, one epoch of the default model: 4 minutes on two busy cores.
TRAINING_MINUTES = 15
# A recipe whose data could not be fetched is not fetched again (pip, apt: up to minutes each) at every Start: not
# before this many minutes.
FETCH_RETRY_MINUTES = 10

# The Timeline tab sends one input's snapshots a page at a time: as many snapshots as fit in this many bytes of stored
# payload (a 122-token input of the default model: ~0.5 MB a snapshot, so 16 a page; 10 short ones: all in one).
# Pages are base64-encoded once and kept, least recently used first out, within TIMELINE_CACHE_BYTES for every
# visitor together; a page asks in a lane of its own, as the corpus tab's calls do.
TIMELINE_PAGE_BYTES = 8 * 2**20
TIMELINE_CACHE_BYTES = 96 * 2**20
TIMELINE_PAGES_AT_ONCE = 2
TIMELINE_PAGES_WAITING = 16
TIMELINE_PAGES_PER_MINUTE = 120
