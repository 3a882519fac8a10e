"""One module per vime-sync sub-command; each exposes ``register(app)``.

The CLI is a thin porcelain over the plumbing in ``sync/`` (data in, data out), as in git.
"""
