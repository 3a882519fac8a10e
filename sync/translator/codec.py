"""Bytes ↔ text without losing a byte: UTF-8 where it decodes, surrogateescape where it does not."""

from __future__ import annotations

BINARY_SNIFF = 8192


def is_binary(data: bytes) -> bool:
    """A NUL byte near the start marks a binary file (as git and grep decide)."""
    return b"\x00" in data[:BINARY_SNIFF]


def decode(data: bytes) -> tuple[str, bool]:
    """Text and whether it was clean UTF-8. Undecodable bytes become lone surrogates."""
    try:
        return data.decode("utf-8"), True
    except UnicodeDecodeError:
        return data.decode("utf-8", "surrogateescape"), False


def encode(text: str) -> bytes:
    """Inverse of :func:`decode`: the undecodable bytes come back exactly."""
    return text.encode("utf-8", "surrogateescape")
