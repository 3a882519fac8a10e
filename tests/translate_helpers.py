"""Shared helpers for the translator tests (fixtures live in tests/fixtures/translate/)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from sync.rules import RuleSet, load_rules
from sync.translate import FileTranslation, translate_file

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "translate"


@cache
def rules() -> RuleSet:
    return load_rules()


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def translate(path: str, source: str | bytes) -> FileTranslation:
    data = source.encode() if isinstance(source, str) else source
    return translate_file(path, data, rules())


def text_of(result: FileTranslation) -> str:
    return result.data.decode("utf-8", "surrogateescape")


def rule_ids(result: FileTranslation) -> set[str]:
    return {applied.rule_id for applied in result.applied}
