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
MAX_SESSIONS = 500  # ~0.2 MB each (219 kB measured through the queue): ~110 MB at most
SESSION_MINUTES = 60
MAX_QUEUE = 64
MAX_BODY_BYTES = 2**20  # the largest request the page sends is two full text boxes: 20,000 characters each, ~0.5 MB
# The served model's CPU work: one PyTorch thread per forward pass, two passes at once. With two busy processes beside
# the server on two cores, a new 32-token input took 98-100 ms on one thread against 1.3-1.4 s on two (OpenMP threads
# that outnumber free cores spin against each other); 50 visitors x 3 new inputs at once had a p95 of 3.5-4.7 s with
# two passes at once against 6.2-7.1 s with one, and 4.6-5.1 s with four (benchmarks/bench_app.py; README, Speed).
THREADS = 1
CONCURRENCY = 2
