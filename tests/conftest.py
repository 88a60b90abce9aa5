import pytest
import torch

from bertviz_app import BertConfig


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


@pytest.fixture
def tiny_config() -> BertConfig:
    return BertConfig.preset("tiny")
