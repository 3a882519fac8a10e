"""review.html: one static, self-contained page (no network, no server) showing the queue, letting a
reviewer choose options and export decisions.json. The HTML/JS/CSS live in ``sync/report_assets``."""

from __future__ import annotations

import html
import json
import re
from importlib import resources
from typing import Any


def _asset(name: str) -> str:
    return resources.files("sync.report_assets").joinpath(name).read_text(encoding="utf-8")


def embedded_json(doc: dict[str, Any]) -> str:
    """JSON that is inert inside ``<script type="application/json">`` whatever the reviewed files hold:
    ASCII only (lone surrogates of non-UTF-8 text too), and no ``<``, ``>`` or ``&`` that could end
    the script or open a comment."""
    data = json.dumps(doc, ensure_ascii=True)
    return data.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_review_page(doc: dict[str, Any]) -> str:
    """The page with the decisions document embedded as JSON; placeholders are filled in one pass,
    so text inside the document or the assets that looks like a placeholder stays as it is."""
    values = {
        "__TITLE__": html.escape(f"vime-sync review: {doc['window']['name']}"),
        "/*__CSS__*/": _asset("review.css"),
        "/*__JS__*/": _asset("review.js"),
        "__DATA__": embedded_json(doc),
    }
    pattern = re.compile("|".join(re.escape(k) for k in values))
    return pattern.sub(lambda m: values[m.group(0)], _asset("review.html"))
