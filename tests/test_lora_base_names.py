"""Full-weight names into an engine that serves LoRA (vime/backends/vllm_utils/lora_base_names.py).

vLLM 0.26 (the GPU build) wraps adaptable layers without a ``load_weights`` of their own, so a full
push must name ``<layer>.base_layer.weight``; the CPU build (0.32) forwards through the wrapper. The
wrapper here is a plain module holding ``base_layer`` as 0.26's does, loaded by the installed vLLM's
own ``AutoWeightsLoader``.
"""

from __future__ import annotations

from typing import ClassVar

import pytest
import torch
from torch import nn

from vime.backends.vllm_utils import lora_base_names
from vime.backends.vllm_utils.lora_base_names import into_base_layer, renamed, wrapped_layer_names


class Wrapper(nn.Module):  # 0.26's BaseLayerWithLoRA: the layer one level down, no load_weights
    def __init__(self, base: nn.Module) -> None:
        super().__init__()
        self.base_layer = base


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.qkv_proj = Wrapper(nn.Linear(4, 12, bias=False))
        self.norm = nn.LayerNorm(4)


class Model(nn.Module):
    packed_modules_mapping: ClassVar[dict[str, list[str]]] = {"qkv_proj": ["q_proj", "k_proj", "v_proj"]}

    def __init__(self) -> None:
        super().__init__()
        self.embed_tokens = Wrapper(nn.Embedding(10, 4))
        self.attn = Attention()


def test_wrapped_layers_and_their_packed_names() -> None:
    assert wrapped_layer_names(Model()) == {"embed_tokens", "qkv_proj", "q_proj", "k_proj", "v_proj"}
    assert wrapped_layer_names(nn.Sequential(nn.Linear(2, 2))) == frozenset()


def test_names_move_into_base_layer_only_for_wrapped_parameters() -> None:
    wrapped = frozenset({"embed_tokens", "q_proj"})
    assert into_base_layer("model.embed_tokens.weight", wrapped) == "model.embed_tokens.base_layer.weight"
    assert into_base_layer("layers.0.q_proj.bias", wrapped) == "layers.0.q_proj.base_layer.bias"
    assert into_base_layer("layers.0.norm.weight", wrapped) == "layers.0.norm.weight"
    assert into_base_layer("embed_tokens", wrapped) == "embed_tokens"


def test_vllm_loader_finds_the_renamed_weights_and_not_the_plain_ones(monkeypatch) -> None:
    from vllm.model_executor.models.utils import AutoWeightsLoader

    model = Model()
    weights = [
        ("embed_tokens.weight", torch.full((10, 4), 2.0)),
        ("attn.qkv_proj.weight", torch.full((12, 4), 3.0)),
        ("attn.norm.weight", torch.full((4,), 5.0)),
        ("attn.norm.bias", torch.zeros(4)),
    ]
    with pytest.raises(ValueError, match="embed_tokens"):
        AutoWeightsLoader(model).load_weights(weights)

    monkeypatch.setattr(lora_base_names, "wrapper_loads_itself", lambda: False)
    rename = lora_base_names.base_layer_renamer(model)
    assert rename is not None
    AutoWeightsLoader(model).load_weights(renamed(weights, rename))
    assert torch.equal(model.embed_tokens.base_layer.weight, torch.full((10, 4), 2.0))
    assert torch.equal(model.attn.qkv_proj.base_layer.weight, torch.full((12, 4), 3.0))
    assert torch.equal(model.attn.norm.weight, torch.full((4,), 5.0))


def test_no_renaming_where_vllm_loads_through_the_wrapper(monkeypatch) -> None:
    monkeypatch.setattr(lora_base_names, "wrapper_loads_itself", lambda: True)
    assert lora_base_names.base_layer_renamer(Model()) is None
    assert renamed([("a.weight", 1)], None) == [("a.weight", 1)]


def test_worker_extension_renames_what_it_loads_and_walks_the_model_once(monkeypatch) -> None:
    from vime.backends.vllm_utils.worker_extension import VimeWorkerExtension

    monkeypatch.setattr(lora_base_names, "wrapper_loads_itself", lambda: False)
    walks = []
    real = lora_base_names.wrapped_layer_names
    monkeypatch.setattr(lora_base_names, "wrapped_layer_names", lambda m: walks.append(m) or real(m))

    class Runner:  # the worker's model runner: only its model is read
        model = Model()

    extension = VimeWorkerExtension.__new__(VimeWorkerExtension)
    extension.model_runner = Runner()
    first = extension._vime_loaded_names([("embed_tokens.weight", 1), ("attn.norm.weight", 2)])
    second = extension._vime_loaded_names([("attn.q_proj.weight", 3)])
    assert first == [("embed_tokens.base_layer.weight", 1), ("attn.norm.weight", 2)]
    assert second == [("attn.q_proj.base_layer.weight", 3)]
    assert len(walks) == 1
