"""Tokenizer, processor and image helpers under slime's names (``slime.utils.processing_utils``).

slime's multimodal plugins load their tokenizer and processor through these and send images to the
rollout engine as base64 data URLs; vime keeps the same functions so the translated imports
resolve. vime's own rollout is text-only today: a plugin that posts ``image_data`` to the engine
is refused by ``vime.compat.slime_http`` in one line.
"""

from __future__ import annotations

import base64
import io
import logging
from typing import Any

logger = logging.getLogger(__name__)

# Image patch size when the processor does not say (Qwen2.5-VL uses 14, Qwen3-VL 16).
DEFAULT_PATCH_SIZE = 14


def load_tokenizer(name_or_path: str, **kwargs: Any) -> Any:
    """``AutoTokenizer.from_pretrained`` (kwargs passed through)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(name_or_path, **kwargs)


def load_processor(name_or_path: str, **kwargs: Any) -> Any:
    """The model's multimodal processor, or None for a text-only model (when Hugging Face gives
    back only a tokenizer, or nothing loads)."""
    from transformers import AutoProcessor, PreTrainedTokenizerBase, ProcessorMixin

    try:
        processor = AutoProcessor.from_pretrained(name_or_path, **kwargs)
    except (OSError, ValueError) as exc:
        logger.warning("no processor for %s: %s", name_or_path, exc)
        return None
    if isinstance(processor, PreTrainedTokenizerBase) or not isinstance(processor, ProcessorMixin):
        return None
    return processor


def build_processor_kwargs(multimodal_inputs: dict | None = None) -> dict:
    """Keyword arguments for a processor call: ids as lists for text, tensors for every modality."""
    forced = {"return_tensors": "pt"}
    result = dict(multimodal_inputs) if multimodal_inputs else {}
    result["text_kwargs"] = {
        **result.get("text_kwargs", {}),
        "return_tensors": None,
        "return_mm_token_type_ids": False,
    }
    for key in ("audio_kwargs", "images_kwargs", "videos_kwargs"):
        result[key] = {**result.get(key, {}), **forced}
    return result


def _open_image(data: Any) -> Any:
    from PIL import Image

    if isinstance(data, Image.Image):
        return data
    if data.startswith("data:"):
        return Image.open(io.BytesIO(base64.b64decode(data.split(",", 1)[1])))
    try:
        return Image.open(io.BytesIO(base64.b64decode(data, validate=True)))
    except (ValueError, OSError):
        return Image.open(data)  # a file path


def extract_images_from_messages(messages: list[dict]) -> list[Any]:
    """PIL images in chat messages' ``{"type": "image", "image": ...}`` parts (an image, a data URL,
    base64 text or a file path)."""
    images = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if isinstance(part, dict) and part.get("type") == "image" and part.get("image") is not None:
                images.append(_open_image(part["image"]))
    return images


def process_vision_info(prompt: list[dict], processor: Any) -> dict[str, Any]:
    """``{"images", "videos"}`` of a chat prompt: ``qwen_vl_utils`` when installed (Qwen VL models),
    else the images found in the messages."""
    try:
        from qwen_vl_utils import process_vision_info as qwen_process_vision_info
    except ImportError:
        return {"images": extract_images_from_messages(prompt) or None, "videos": None}
    patch = getattr(getattr(processor, "image_processor", None), "patch_size", DEFAULT_PATCH_SIZE)
    images, videos = qwen_process_vision_info(prompt, image_patch_size=patch)
    return {"images": images, "videos": videos}


def encode_image_for_rollout_engine(image: Any) -> str:
    """An image as a PNG data URL (RGB), the form engines take images in."""
    buffer = io.BytesIO()
    (image if image.mode == "RGB" else image.convert("RGB")).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
