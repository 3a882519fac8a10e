"""The SGLang→vLLM translator: libcst passes for Python, word-bounded rules for other text.

``sync.translate`` is the entry point; the modules here each do one job (see docs/translation.md).
"""
