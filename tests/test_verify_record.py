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
