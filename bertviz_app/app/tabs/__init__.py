"""The page's tabs, one module each, every one following the `Tab` protocol (base.py). `TABS` is the one list of
them, in the order of the tab bar (the page opens on the first): adding a tab is a new module here and one line
below."""

from .base import Gate, Tab, TabPage, check_tabs, tab_step_js
from .beyond import BeyondTab
from .compare import CompareTab
from .corpus import CorpusTab
from .embeddings import EmbeddingsTab
from .finetune import FineTuneTab
from .hidden import HiddenTab
from .masked_lm import MaskedLMTab
from .model_info import ModelTab
from .next_sentence import NextSentenceTab
from .pretrain import PretrainTab
from .task import TaskTab
from .timeline import TimelineTab
from .tokens import TokensTab

TABS: tuple[type[Tab], ...] = (
    TokensTab,
    EmbeddingsTab,
    HiddenTab,
    MaskedLMTab,
    NextSentenceTab,
    TaskTab,
    TimelineTab,
    FineTuneTab,
    PretrainTab,
    BeyondTab,
    CompareTab,
    CorpusTab,
    ModelTab,
)

__all__ = ["TABS", "Gate", "Tab", "TabPage", "check_tabs", "tab_step_js"]
