"""The embedded demo: a slime-style upstream and a vime-style downstream, built as real git repos (see build.py)."""
