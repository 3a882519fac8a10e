"""The one error type the sync commands print as a single line (the thing at fault, and the fix)."""


class SyncError(RuntimeError):
    """Bad input or a state the sync refuses to work in; nothing was changed when it is raised."""
