"""Network helpers the tests share."""

from __future__ import annotations

import socket


def free_port(host: str = "") -> int:
    """A TCP port nothing listens on at this moment (the OS picks it; a caller binds it soon after)."""
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]
