"""Uses of an imported name follow its import; other spellings of the word do not (LibCST scopes).

``from sglang.srt.server_args import ServerArgs`` becomes ``... import EngineArgs``. Before scope
analysis every ``ServerArgs`` of the file was renamed: a parameter (which changes the function's
keyword interface for its callers), a keyword argument, an attribute of another object.
"""

from __future__ import annotations

import ast

import pytest
from translate_helpers import text_of, translate

from sync.translator.memo import MEMO
from sync.translator.py_scopes import needs_scopes

PATH = "slime/utils/launch.py"
IMPORT = "from sglang.srt.server_args import ServerArgs\n\n\n"


@pytest.fixture(autouse=True)
def _empty_memo():
    MEMO.entries.clear()
    yield
    MEMO.entries.clear()


def _out(body: str) -> str:
    out = text_of(translate(PATH, IMPORT + body))
    assert out.startswith("from vllm.engine.arg_utils import EngineArgs\n")
    return out


def test_a_parameter_keyword_and_attribute_spelled_like_the_import_keep_their_name():
    out = _out(
        "def build(obj, ServerArgs=None):\n    return obj.ServerArgs, dict(ServerArgs=1), ServerArgs\n"
    )
    assert (
        "def build(obj, ServerArgs=None):\n    return obj.ServerArgs, dict(ServerArgs=1), ServerArgs\n" in out
    )


def test_uses_of_the_import_beside_a_shadowing_parameter_are_renamed():
    out = _out(
        "def build(ServerArgs):\n    return ServerArgs.x\n\n\n"
        "def use(args):\n    return ServerArgs(model=args.model), launch(ServerArgs=ServerArgs)\n"
    )
    assert "def build(ServerArgs):\n    return ServerArgs.x\n" in out
    assert "return EngineArgs(model=args.model), launch(ServerArgs=EngineArgs)\n" in out


def test_locals_in_a_long_method_are_resolved_over_the_whole_method():
    """A method of 8+ lines is normally translated statement by statement (the local assignment
    and its use apart); with a shadowing local it is visited whole, so the use sees the local."""
    filler = "".join(f"        step_{i} = {i}\n" for i in range(8))
    out = _out(
        "class Launcher:\n"
        "    def local(self):\n"
        "        ServerArgs = make()\n" + filler + "        return ServerArgs.port\n\n"
        "    def imported(self):\n" + filler + "        return ServerArgs(model='m')\n"
    )
    assert "        ServerArgs = make()\n" in out
    assert "        return ServerArgs.port\n" in out
    assert "        return EngineArgs(model='m')\n" in out


def test_module_level_rebinding_and_global_statements_stay_the_import():
    out = _out(
        "try:\n    import extra\nexcept ImportError:\n    ServerArgs = None\n\n\n"
        "def reset():\n    global ServerArgs\n    ServerArgs = None\n"
    )
    assert "except ImportError:\n    EngineArgs = None\n" in out
    assert "    global EngineArgs\n    EngineArgs = None\n" in out


def test_comprehension_and_lambda_variables_are_local():
    out = _out(
        "names = [ServerArgs for ServerArgs in range(3)]\npick = lambda ServerArgs: ServerArgs\nkind = ServerArgs\n"
    )
    assert "names = [ServerArgs for ServerArgs in range(3)]\n" in out
    assert "pick = lambda ServerArgs: ServerArgs\n" in out
    assert "kind = EngineArgs\n" in out


def test_an_import_inside_a_function_is_followed_by_its_uses():
    out = text_of(
        translate(
            PATH,
            "def launch(model):\n"
            "    from sglang.srt.server_args import ServerArgs\n\n"
            "    return ServerArgs(model=model), dict(ServerArgs=1)\n",
        )
    )
    assert "    from vllm.engine.arg_utils import EngineArgs\n" in out
    assert "    return EngineArgs(model=model), dict(ServerArgs=1)\n" in out


def test_the_same_statement_translates_the_same_from_the_memo():
    body = "def build(obj, ServerArgs=None):\n    return obj.ServerArgs, ServerArgs\n"
    first = _out(body)
    assert _out(body) == first
    assert MEMO.hits > 0


def test_plain_uses_need_no_scope_analysis_and_other_spellings_do():
    """The cheap check on Python's parse tree: only statements that need it pay for scopes."""
    names = frozenset({"ServerArgs"})

    def needs(code: str) -> bool:
        return needs_scopes(ast.parse(code).body[0], names)

    assert not needs("def f(x):\n    return ServerArgs(x)\n")
    assert not needs("ServerArgs = None\n")
    assert not needs("class C(ServerArgs):\n    pass\n")
    assert needs("def f(ServerArgs):\n    pass\n")
    assert needs("f(ServerArgs=1)\n")
    assert needs("x = y.ServerArgs\n")
    assert needs("def f():\n    ServerArgs = 1\n")
    assert needs("def f():\n    global ServerArgs\n")
    assert needs("del ServerArgs\n")
    assert needs("class C:\n    ServerArgs = 1\n")
    assert not needs("def f(other):\n    return other\n")


def test_a_name_imported_from_a_module_that_stays_sglang_keeps_its_uses_in_a_scoped_statement():
    """slime's ``deepgemm_moe_forward.py``: a function imports ``sglang_per_token_group_quant_fp8``
    from a module with no vLLM counterpart beside imports that change. The function is visited
    with scope analysis for the changing names; the kept import's uses must stay as they are, not
    fall to the ``sglang_x`` → ``vllm_x`` identifier rule (which left the import and renamed the uses)."""
    out = _out(
        "def load():\n"
        "    from sglang.srt.server_args import ServerArgs\n"
        "    from sglang.srt.layers.quantization.fp8_kernel import sglang_per_token_group_quant_fp8\n"
        "    return ServerArgs, dict(quant=sglang_per_token_group_quant_fp8)\n"
    )
    assert "import sglang_per_token_group_quant_fp8\n" in out
    assert "dict(quant=sglang_per_token_group_quant_fp8)" in out
    assert "vllm_per_token_group_quant_fp8" not in out
