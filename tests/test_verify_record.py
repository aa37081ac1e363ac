"""record: a real pytest run of a sample project, then verify --inputs replays the calls."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from vjp_migrate.cli import main
from vjp_migrate.verify import Verdict, VerifyOptions, render_report, verify_files
from vjp_migrate.verify.record import record
from vjp_migrate.verify.values import read_recording

SAMPLE = Path(__file__).parent / "data" / "verify" / "sample_project"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("sample") / "project"
    shutil.copytree(SAMPLE, root)
    result = record(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        root / "inputs.npz",
        capture=True,
        cwd=root,
    )
    assert result.exit_code == 0, result.message
    return root


def test_record_captures_concrete_traced_and_callable_arguments(project: Path) -> None:
    recording = read_recording(project / "inputs.npz")
    by_name = {f.qualname: f for f in recording.functions}
    assert set(by_name) == {"clip_gradient", "apply_scaled"}
    clip = by_name["clip_gradient"]
    assert clip.module == "mathops.clipping"
    assert Path(clip.file) == (project / "mathops" / "clipping.py").resolve()
    kinds = [[spec["t"] for spec in call] for call in clip.calls]
    assert kinds == [["py", "py", "abstract"], ["array", "array", "abstract"]]  # x traced by grad / jit
    assert clip.calls[1][2] == {"t": "abstract", "shape": [3], "dtype": "float32"}
    (scaled,) = by_name["apply_scaled"].calls
    assert scaled[0] == {"t": "ref", "ref": "mathops._util:square"}


def test_recording_is_npz_with_json_structure_and_no_pickle(project: Path) -> None:
    with np.load(project / "inputs.npz", allow_pickle=False) as data:
        assert "__structure__" in data.files
        assert all(data[k].dtype != object for k in data.files)


def test_verify_replays_recorded_inputs(project: Path) -> None:
    report = verify_files(
        project / "mathops" / "clipping.py",
        project / "mathops" / "clipping_after.py",
        VerifyOptions(inputs=project / "inputs.npz"),
    )
    assert report.exit_code == 0, render_report(report)
    assert {(r.name, r.input_source, r.verdict) for r in report.rows} == {
        ("clip_gradient", "recorded", Verdict.EQUAL),
        ("apply_scaled", "recorded", Verdict.EQUAL),
    }


def test_cli_verify_inputs_and_bad_recording(project: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["verify", str(project / "mathops" / "clipping.py"), str(project / "mathops" / "clipping_after.py")]
    done = runner.invoke(main, [*args, "--inputs", str(project / "inputs.npz")])
    assert done.exit_code == 0, done.output
    assert "recorded" in done.output and "2 equal" in done.output
    bogus = tmp_path / "bogus.npz"
    np.savez(bogus, x=np.zeros(2))
    done = runner.invoke(main, [*args, "--inputs", str(bogus)])
    assert done.exit_code == 2
    assert "not a vjp-migrate recording" in done.output


def test_record_with_nothing_recorded_exits_2(tmp_path: Path) -> None:
    result = record([sys.executable, "-c", "print('no jax here')"], tmp_path / "out.npz", capture=True)
    assert result.exit_code == 2
    assert not (tmp_path / "out.npz").exists()


def test_a_recording_that_cannot_be_written_is_one_message_and_exit_2(tmp_path: Path) -> None:
    """The CLI refuses such an --out up front; a failure at the end (a full disk) is still no traceback."""
    script = tmp_path / "calls.py"
    script.write_text(HANGS_AFTER_A_CALL.replace("time.sleep(600)", ""), encoding="utf-8")
    out = tmp_path / "missing" / "out.npz"
    result = record([sys.executable, str(script)], out, capture=True)
    assert result.exit_code == 2
    assert result.message == f"cannot write the recording {out}: No such file or directory"


HANGS_AFTER_A_CALL = """\
import time
from functools import partial

import jax


@partial(jax.custom_vjp, nondiff_argnums=(0,))
def scale(s, x):
    return s * x


scale.defvjp(lambda s, x: (scale(s, x), None), lambda s, _, g: (s * g,))
scale(2.0, 3.0)
print("called", flush=True)
time.sleep(600)
"""


def test_a_timed_out_command_keeps_what_it_recorded(tmp_path: Path) -> None:
    # the command is ended with SIGTERM, so the recorder writes before it dies (SIGKILL lost it all)
    script = tmp_path / "hangs.py"
    script.write_text(HANGS_AFTER_A_CALL, encoding="utf-8")
    result = record([sys.executable, str(script)], tmp_path / "out.npz", timeout=20, capture=True)
    assert result.command_status is None and result.exit_code == 2
    assert result.message.startswith("the command timed out after 20s; recorded 1 call(s) of 1 custom_vjp")
    (function,) = read_recording(tmp_path / "out.npz").functions
    assert function.qualname == "scale" and len(function.calls) == 1


def test_a_timed_out_command_that_recorded_nothing_says_it_timed_out(tmp_path: Path) -> None:
    result = record([sys.executable, "-c", "import time; time.sleep(600)"], tmp_path / "out.npz", timeout=1)
    assert result.exit_code == 2
    assert result.message == "the command timed out after 1s; no custom_vjp call was recorded"
