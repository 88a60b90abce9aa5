"""Many sentences at once: build a small corpus with the default model, then ask it what its heads do, which tokens
are used like "bank" in a river sentence, and where queries and keys of one head sit, then go back to one sentence.

    python examples/corpus_tour.py            # a few seconds; writes the corpus into a temporary folder
    bertviz-app corpus build brown -o brown --max-sentences 10000   # a real corpus (Brown, tagged)
"""

import tempfile
from pathlib import Path

import bertviz_app

SENTENCES = """I sat by the bank of the river.
She deposited the cheque at the bank on Monday.
The bank raised its interest rates again.
We had a picnic on the grassy bank of the stream.
Fish gathered near the muddy bank.
The bank refused to lend them any money.
The cat sat on the mat.
A dog barked at the mailman.
Paris is the capital of France.
The children played outside until dark.
He opened the door and the room was dark.
The river flooded the fields after the storm.
Interest rates rose, and the markets fell.
She wrote a letter to her grandmother.
The teacher explained the lesson twice."""

with tempfile.TemporaryDirectory() as tmp:
    source = Path(tmp) / "sentences.txt"
    source.write_text(SENTENCES + "\n", encoding="utf-8")
    folder = bertviz_app.build_corpus(source, Path(tmp) / "corpus", say=lambda text: None)
    corpus = bertviz_app.open_corpus(folder)
    print(corpus)

    summary = corpus.head_summary()  # one row per layer x head: each statistic's mean and spread, and a role
    print(summary["role"].value_counts().to_string())
    print(summary.nlargest(3, "previous")[["layer", "head", "previous", "previous_spread", "role"]].to_string())

    found = corpus.search("I sat by the bank of the river.", token_index=5, layer=6, k=5)  # token 5: "bank"
    print(found.table[["score", "sentence", "word", "text"]].to_string())

    points = corpus.qk_map(layer=2, head=3)  # AttentionViz's joint map: queries and keys in one 2-D picture
    print(points.groupby("kind")[["x", "y"]].mean().round(2).to_string())
    print(corpus.sentence_map(layer=-1, pooling="mean").head(3).to_string())

    run = corpus.run(int(found.table["sentence"].iloc[1]))  # any point leads back to one sentence's views
    print(run)
