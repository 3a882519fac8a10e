"""What became of one upstream commit, as the ledger records it: the disposition values, defined once."""

from __future__ import annotations

from enum import StrEnum


class Disposition(StrEnum):
    """A ledger row's disposition, in the order LEDGER.md counts them. The values are what the ledger
    file spells, so a member compares and serializes as its plain string."""

    MIRRORED = "mirrored"  # its changes landed
    REVIEW = "review"  # a conflict or file question of the window comes from its changes
    PORT = "port"  # a port request: the path is vime-owned or was never in vime
    NO_EFFECT = "no_effect"  # nothing changes after translation
    NOT_MIRRORED = "not_mirrored"  # the rules do not mirror its paths
    EMPTY = "empty"  # no files
    PORTED = "ported"  # by hand: ported into vime
    EXCLUDED = "excluded"  # by hand: left out on purpose


#: the dispositions ``vime-sync ledger --mark`` may set, in the order its error message lists them
BY_HAND = (Disposition.PORTED, Disposition.EXCLUDED, Disposition.MIRRORED, Disposition.PORT)
