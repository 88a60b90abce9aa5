"""What a served app holds at most, by default: one home for the numbers that the command line, the explorer and the
server share."""

# A Run of the default model weighs about 0.2 MB at 32 tokens and 55-61 MB at 512 (attention grows with the square of
# the length): 256 MB per model keeps hundreds of sentences, or the last few long documents.
CACHE_MB = 256
MAX_TOKENS = 256
MAX_SESSIONS = 500  # ~0.2 MB each (219 kB measured through the queue): ~110 MB at most
SESSION_MINUTES = 60
MAX_QUEUE = 64
MAX_BODY_BYTES = 2**20  # the largest request the page sends is two full text boxes: 20,000 characters each, ~0.5 MB
