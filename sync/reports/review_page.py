"""review.html: one static, self-contained page (no network, no server) showing the queue, letting a
reviewer choose options and export decisions.json. The HTML/JS/CSS live in ``sync/report_assets``."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any


def _asset(name: str) -> str:
    return resources.files("sync.report_assets").joinpath(name).read_text(encoding="utf-8")


def render_review_page(doc: dict[str, Any]) -> str:
    """The page with the decisions document embedded as JSON (``</`` escaped so it cannot end the script)."""
    data = json.dumps(doc, ensure_ascii=False).replace("</", "<\\/")
    title = f"vime-sync review: {doc['window']['name']}"
    page = _asset("review.html")
    return (
        page.replace("__TITLE__", title)
        .replace("/*__CSS__*/", _asset("review.css"))
        .replace("/*__JS__*/", _asset("review.js"))
        .replace("__DATA__", data)
    )
