"""Many sentences at once: `build_corpus(source, folder)` runs a source through the model into a folder of shards
(build.py), and `open_corpus(folder)` asks it questions (store.py): head summaries, tag links, positional profiles,
search by contextual embedding, the joint query/key map of a head and the sentence map, each leading back to one
sentence's full Run."""

from .build import CorpusSettings, build_corpus
from .sources import CORPUS_RECIPES, CorpusError
from .store import Corpus, open_corpus

__all__ = ["CORPUS_RECIPES", "Corpus", "CorpusError", "CorpusSettings", "build_corpus", "open_corpus"]
