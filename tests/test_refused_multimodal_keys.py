"""--multimodal-keys (slime's vision-language data mapping) is refused in one line before anything starts:
vime has no image path, so accepting it would train on the text alone without saying so."""

from __future__ import annotations

import pytest

from vime.utils.arguments import parse_args


def test_multimodal_keys_is_refused_with_the_reason(tiny_model_dir, capsys):
    argv = ["--hf-checkpoint", str(tiny_model_dir), "--rollout-batch-size", "2", "--n-samples-per-prompt", "2",
            "--num-rollout", "1", "--multimodal-keys", '{"image": "images"}']  # fmt: skip
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --multimodal-keys") and "vision-language" in err and "\n" not in err
    assert "unrecognized" not in err
