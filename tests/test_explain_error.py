"""explain-error: from JAX's Tracer/nondiff_argnums traceback to the definition and its migration."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import ROOT

from vjp_migrate.cli import main

SEED = (ROOT / "examples" / "clip_gradient.py").read_text(encoding="utf-8")
ERROR = (
    "jax.errors.UnexpectedTracerError: Found a JAX Tracer object passed as an argument to a custom_vjp\n"
    "function in a position indicated by nondiff_argnums as non-differentiable. Tracers cannot be passed as "
    "non-differentiable arguments to custom_vjp functions; instead, nondiff_argnums should only be used for "
    "arguments that can't be or contain JAX tracers, e.g. function-valued arguments. In particular, "
    "array-valued arguments should typically not be indicated as nondiff_argnums.\n"
)


def traceback_for(model: Path) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "{model.parent / "train.py"}", line 3, in <module>\n'
        "    jax.jit(loss)(0.0, 1.0, 2.0)\n"
        f'  File "{model}", line 20, in loss\n'
        "    return clip_gradient(lo, hi, x).sum()\n"
        '  File "/usr/lib/python3/site-packages/jax/_src/custom_derivatives.py", line 600, in __call__\n'
        "    _check_for_tracers(args)\n" + ERROR
    )


def run(text: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["explain-error"], input=text, catch_exceptions=False)
    return result.exit_code, result.stdout


def test_points_at_the_definition_and_prints_the_migration(tmp_path: Path) -> None:
    model = tmp_path / "model.py"
    model.write_text(SEED + "\n\ndef loss(lo, hi, x):\n    return clip_gradient(lo, hi, x).sum()\n", encoding="utf-8")
    code, out = run(traceback_for(model))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == (
        f"{model}:8:5: custom_vjp `clip_gradient` received a JAX Tracer in a position listed in nondiff_argnums"
    )
    assert lines[1] == f"  called at {model}:20: return clip_gradient(lo, hi, x).sum()"
    assert lines[2].startswith("  `lo` (position 0): array-valued")
    assert "+@jax.custom_vjp" in out and "+def clip_gradient_bwd(res, g):" in out
    # a safe fix of array data: the plain fix of that one file applies it
    assert f"The migration (`vjp-migrate fix {model}` applies it):" in out


def test_the_fix_command_asks_for_unsafe_fixes_only_when_the_migration_needs_them(tmp_path: Path) -> None:
    model = tmp_path / "model.py"
    unknown = SEED.replace("jnp.clip(g, lo, hi)", "helper(g, lo, hi)")  # lo, hi: VJP002, no safe fix
    model.write_text(
        unknown + "\n\ndef loss(lo, hi, x):\n    return clip_gradient(lo, hi, x).sum()\n", encoding="utf-8"
    )
    code, out = run(traceback_for(model))
    assert code == 0
    assert f"The migration (`vjp-migrate fix --unsafe-fixes --select ALL {model}` applies it):" in out


def test_the_fix_command_works_for_a_path_that_starts_with_a_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`vjp-migrate fix -dash/model.py` is read as the option -d (cli29 22)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-dash").mkdir()
    model = Path("-dash") / "model.py"
    model.write_text(SEED + "\n\ndef loss(lo, hi, x):\n    return clip_gradient(lo, hi, x).sum()\n", encoding="utf-8")
    code, out = run(traceback_for(model))
    assert code == 0
    assert "The migration (`vjp-migrate fix ./-dash/model.py` applies it):" in out
    command = out.split("The migration (`vjp-migrate ")[1].split("`")[0].split()
    fixed = CliRunner().invoke(main, command, catch_exceptions=False)
    assert fixed.exit_code == 0, fixed.output
    assert "nondiff_argnums" not in model.read_text(encoding="utf-8")


def test_text_without_the_error_exits_2() -> None:
    assert run("Traceback (most recent call last):\nValueError: nope\n")[0] == 2


def test_definition_not_in_the_traceback_files_exits_1(tmp_path: Path) -> None:
    model = tmp_path / "model.py"
    model.write_text("import jax\n", encoding="utf-8")
    code, out = run(traceback_for(model))
    assert code == 1 and "no custom_vjp called in its frames was found" in out


def package(root: Path) -> Path:
    """mypkg/ops.py defines the custom_vjp; mypkg/__init__.py re-exports it."""
    (root / "mypkg").mkdir()
    (root / "mypkg" / "__init__.py").write_text("from .ops import clip_gradient\n", encoding="utf-8")
    (root / "mypkg" / "ops.py").write_text(SEED, encoding="utf-8")
    return root


@pytest.mark.parametrize(
    "imports, call",
    [
        pytest.param("from mypkg.ops import clip_gradient", "clip_gradient(lo, 1.0, x)", id="from module import"),
        pytest.param("from mypkg import ops", "ops.clip_gradient(lo, 1.0, x)", id="module attribute"),
        pytest.param("import mypkg", "mypkg.clip_gradient(lo, 1.0, x)", id="re-exported by the package"),
    ],
)
def test_definition_in_a_module_the_calling_file_imports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, imports: str, call: str
) -> None:
    """JAX drops its own frames, so the traceback ends at the caller: the definition is in an import."""
    root = package(tmp_path)
    script = root / "train.py"
    script.write_text(f"import jax\n{imports}\n\nloss = lambda lo, x: {call}\n", encoding="utf-8")
    monkeypatch.chdir(root)
    text = (
        "Traceback (most recent call last):\n"
        f'  File "{script}", line 4, in <lambda>\n'
        f"    loss = lambda lo, x: {call}\n" + ERROR
    )
    code, out = run(text)
    assert code == 0, out
    assert out.splitlines()[0] == (
        "mypkg/ops.py:8:5: custom_vjp `clip_gradient` received a JAX Tracer in a position listed in nondiff_argnums"
    )


PYTEST_OUTPUT = """\
=================================== FAILURES ===================================
__________________________________ test_grad ___________________________________

    def test_grad():
        f = jax.jit(jax.grad(lambda lo, x: clip_gradient(lo, 1.0, x)))
>       assert f(0.0, 2.0) == 0.0
               ^^^^^^^^^^^

tests/test_ops.py:7:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

lo = GradTracer(primal=JitTracer(~float32[]), typeof(tangent)=f32[])
x = JitTracer(~float32[])

>   f = jax.jit(jax.grad(lambda lo, x: clip_gradient(lo, 1.0, x)))
                                       ^^^^^^^^^^^^^^^^^^^^^^^^^
E   jax.errors.UnexpectedTracerError: Found a JAX Tracer object passed as an argument to a custom_vjp
E   function in a position indicated by nondiff_argnums as non-differentiable. Tracers cannot be passed
E   as non-differentiable arguments to custom_vjp functions.

tests/test_ops.py:6: UnexpectedTracerError
=========================== short test summary info ============================
FAILED tests/test_ops.py::test_grad - jax.errors.UnexpectedTracerError: Found...
"""

TEST_FILE = """\
import jax
from mypkg.ops import clip_gradient


def test_grad():
    f = jax.jit(jax.grad(lambda lo, x: clip_gradient(lo, 1.0, x)))
    assert f(0.0, 2.0) == 0.0
"""


def test_pytest_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = package(tmp_path)
    (root / "tests").mkdir()
    (root / "tests" / "test_ops.py").write_text(TEST_FILE, encoding="utf-8")
    monkeypatch.chdir(root)
    code, out = run(PYTEST_OUTPUT)
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].startswith("mypkg/ops.py:8:5: custom_vjp `clip_gradient` received a JAX Tracer")
    assert lines[1] == "  called at tests/test_ops.py:6: f = jax.jit(jax.grad(lambda lo, x: clip_gradient(lo, 1.0, x)))"


def installed(tmp_path: Path) -> Path:
    """mylib installed (not editable) in a virtualenv's site-packages: mylib.api calls the custom_vjp
    defined in mylib._ops; mylib re-exports both."""
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    (site / "mylib").mkdir(parents=True)
    (site / "mylib" / "__init__.py").write_text(
        "from ._ops import clip_gradient\nfrom .api import loss\n", encoding="utf-8"
    )
    (site / "mylib" / "_ops.py").write_text(SEED, encoding="utf-8")
    (site / "mylib" / "api.py").write_text(
        "import jax\nfrom ._ops import clip_gradient\n\n\ndef loss(lo, hi, x):\n    return clip_gradient(lo, hi, x).sum()\n",
        encoding="utf-8",
    )
    (tmp_path / "project").mkdir()
    return site


def test_frames_in_an_installed_package_are_followed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = installed(tmp_path)
    script = tmp_path / "project" / "train.py"
    script.write_text("import jax, mylib\n\njax.jit(mylib.loss)(0.0, 1.0, 2.0)\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path / "project")
    text = (
        "Traceback (most recent call last):\n"
        f'  File "{script}", line 3, in <module>\n'
        "    jax.jit(mylib.loss)(0.0, 1.0, 2.0)\n"
        f'  File "{site / "mylib" / "api.py"}", line 6, in loss\n'
        "    return clip_gradient(lo, hi, x).sum()\n" + ERROR
    )
    code, out = run(text)
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == (
        f"{site / 'mylib' / '_ops.py'}:8:5: custom_vjp `clip_gradient` received a JAX Tracer in a position "
        "listed in nondiff_argnums"
    )
    assert lines[1] == f"  called at {site / 'mylib' / 'api.py'}:6: return clip_gradient(lo, hi, x).sum()"
    assert "installed package" in out and "vjp-migrate fix" not in out
    assert "+@jax.custom_vjp" in out


def test_an_installed_package_the_caller_imports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The traceback ends at the caller (JAX drops its frames): the import is followed into the
    site-packages of the traceback (here: the one its pytest frames are in)."""
    site = installed(tmp_path)
    test_file = tmp_path / "project" / "test_ops.py"
    test_file.write_text("import mylib\n\n\ndef test_grad():\n    mylib.clip_gradient(0.0, 1.0, 2.0)\n")
    monkeypatch.chdir(tmp_path / "project")
    text = (
        "Traceback (most recent call last):\n"
        f'  File "{site / "_pytest" / "python.py"}", line 157, in pytest_pyfunc_call\n'
        "    result = testfunction(**testargs)\n"
        f'  File "{test_file}", line 5, in test_grad\n'
        "    mylib.clip_gradient(0.0, 1.0, 2.0)\n" + ERROR
    )
    code, out = run(text)
    assert code == 0, out
    assert out.startswith(f"{site / 'mylib' / '_ops.py'}:8:5: custom_vjp `clip_gradient`")


def test_the_running_pythons_site_packages_when_the_traceback_names_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vjp_migrate import explain_error

    site = installed(tmp_path)
    monkeypatch.setattr(explain_error, "_environment_sites", lambda: [site])
    script = tmp_path / "project" / "train.py"
    call = "loss = jax.jit(lambda lo, x: mylib.clip_gradient(lo, 1.0, x))"
    script.write_text(f"import jax, mylib\n\n{call}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path / "project")
    text = f'Traceback (most recent call last):\n  File "{script}", line 3, in <lambda>\n    {call}\n' + ERROR
    code, out = run(text)
    assert code == 0, out
    assert out.startswith(f"{site / 'mylib' / '_ops.py'}:8:5: custom_vjp `clip_gradient`")
    # Found only because it is called: an installed custom_vjp is never the lone-candidate guess.
    script.write_text(f"import jax, mylib\n\n{call.replace('mylib.clip_gradient', 'f')}\n", encoding="utf-8")
    code, out = run(text.replace("mylib.clip_gradient", "f"))
    assert code == 1, out


def two_ops(root: Path, name: str = "ops") -> Path:
    """mypkg/<name>.py with two custom_vjps (so neither is the project's only one)."""
    (root / "mypkg").mkdir(exist_ok=True)
    (root / "mypkg" / "__init__.py").write_text("", encoding="utf-8")
    ops = root / "mypkg" / f"{name}.py"
    ops.write_text(SEED + "\n\n" + SEED.split("\n", 1)[1].replace("clip_gradient", "clip_other"), encoding="utf-8")
    return ops


def jax_frames() -> str:
    """What JAX_TRACEBACK_FILTERING=off adds below the user's frame."""
    return (
        '  File "/venv/lib/python3.11/site-packages/jax/_src/pjit.py", line 257, in cache_miss\n'
        "    outs, out_flat, out_tree, args_flat, jaxpr, attrs_tracked = _python_pjit_helper(\n"
        '  File "/venv/lib/python3.11/site-packages/jax/_src/custom_derivatives.py", line 747, in __call__\n'
        "    _check_for_tracers(args)\n"
    )


@pytest.mark.parametrize(
    "imports, line",
    [
        pytest.param("from mypkg import ops", "jax.jit(ops.clip_gradient)(lo, hi, x)", id="jit of a module attribute"),
        pytest.param(
            "from mypkg.ops import clip_gradient", "y = jax.vmap(clip_gradient)(lo, hi, x)", id="vmap of a name"
        ),
        pytest.param(
            "from mypkg.ops import clip_gradient",
            "return jax.grad(clip_gradient, argnums=2)(lo, hi, x)",
            id="grad with a keyword",
        ),
        pytest.param(
            "from functools import partial\nfrom mypkg.ops import clip_gradient",
            "out = jax.jit(partial(clip_gradient, lo))(hi, x)",
            id="partial under jit",
        ),
    ],
)
@pytest.mark.parametrize("filtered", [True, False], ids=["JAX frames filtered", "JAX frames shown"])
def test_a_custom_vjp_passed_to_jax_in_the_innermost_user_frame(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, imports: str, line: str, filtered: bool
) -> None:
    ops = two_ops(tmp_path)
    script = tmp_path / "train.py"
    script.write_text(f"import jax\n{imports}\n\n{line}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    number = imports.count("\n") + 4
    text = f'Traceback (most recent call last):\n  File "{script}", line {number}, in <module>\n    {line}\n'
    code, out = run(text + ("" if filtered else jax_frames()) + ERROR)
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0] == (
        "mypkg/ops.py:8:5: custom_vjp `clip_gradient` received a JAX Tracer in a position listed in nondiff_argnums"
    )
    assert lines[1] == f"  passed at {script}:{number}: {line}"
    assert ops.read_text(encoding="utf-8").count("nondiff_argnums") == 2


@pytest.mark.parametrize(
    "setup, line, inner",
    [
        pytest.param(
            "from mypkg.ops import clip_gradient\nfrom mypkg.other import clip_gradient as clip2",
            "jax.vmap(clip_gradient)(lo, hi, x) + jax.vmap(clip2)(lo, hi, x)",
            None,
            id="two modules define the name",
        ),
        pytest.param(
            "from mypkg.ops import clip_gradient, clip_other",
            "jax.vmap(helper)(clip_gradient, clip_other)",
            None,
            id="passed as data to the transformed function",
        ),
        pytest.param(
            "from mypkg.ops import clip_gradient",
            "jax.jit(run)(clip_gradient, x)",
            ("run", "return fn(lo, hi, x)"),
            id="a user frame below the one that passes it",
        ),
    ],
)
def test_a_passed_function_is_not_guessed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setup: str, line: str, inner: tuple[str, str] | None
) -> None:
    two_ops(tmp_path)
    two_ops(tmp_path, "other")
    script = tmp_path / "train.py"
    script.write_text(f"import jax\n{setup}\n\n{line}\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    number = setup.count("\n") + 4
    text = f'Traceback (most recent call last):\n  File "{script}", line {number}, in <module>\n    {line}\n'
    if inner is not None:
        text += f'  File "{script}", line 2, in {inner[0]}\n    {inner[1]}\n'
    code, out = run(text + ERROR)
    assert code == 1, out


def test_a_real_traceback_of_vmap_over_a_custom_vjp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess
    import sys

    two_ops(tmp_path)
    script = tmp_path / "train.py"
    script.write_text(
        "import jax.numpy as jnp\nimport jax\nfrom mypkg import ops\n\n"
        "jax.vmap(ops.clip_gradient)(jnp.zeros(2), jnp.ones(2), jnp.ones(2))\n",
        encoding="utf-8",
    )
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "UnexpectedTracerError" in done.stderr, done.stderr[-2000:]
    monkeypatch.chdir(tmp_path)
    code, out = run(done.stderr)
    assert code == 0, out
    assert out.startswith("mypkg/ops.py:8:5: custom_vjp `clip_gradient` received a JAX Tracer")


TWICE = """\
from functools import partial
import jax

@partial(jax.custom_vjp, nondiff_argnums=(0,))
def shift(c, x):
    y = x + c
    return y * c

def shift_fwd(c, x):
    return shift(c, x), None

def shift_bwd(c, _, g):
    return (g * c,)

shift.defvjp(shift_fwd, shift_bwd)

def loss(lo, hi, x):
    return clip_gradient(lo, hi, x).sum()
"""


def test_a_reason_seen_on_several_lines_is_said_once_with_its_lines(tmp_path: Path) -> None:
    # probe30 G4: "used in arithmetic in the primal `shift`; used in arithmetic in the primal `shift`"
    model = tmp_path / "model.py"
    model.write_text(TWICE.replace("clip_gradient(lo, hi, x)", "shift(lo, x)"), encoding="utf-8")
    code, out = run(traceback_for(model).replace("line 20", "line 18"))
    assert code == 0, out
    (line,) = [line for line in out.splitlines() if line.startswith("  `c` (position 0)")]
    assert line == (
        "  `c` (position 0): array-valued — used in arithmetic in the primal `shift` (lines 6, 7); "
        "used in arithmetic in helper `shift` (called from fwd `shift_fwd`) (lines 6, 7)"
    )


BUILT = """\
import jax
import jax.numpy as jnp


def make(k):
    def f(x, s):
        return x * s * k

    def f_fwd(x, s):
        return f(x, s), None

    def f_bwd(s, _, g):
        return (g * s * k,)

    return f, f_fwd, f_bwd


f, f_fwd, f_bwd = make(2.0)
f = jax.custom_vjp(f, nondiff_argnums=(1,))
f.defvjp(f_fwd, f_bwd)
SIZES = jnp.array([2.0, 3.0])


def loss(x):
    return f(x, SIZES).sum()
"""


def test_a_position_no_function_names_is_named_once(tmp_path: Path) -> None:
    # review: "`position 1` (position 1)": the number stood for the name too (a factory builds the rules)
    model = tmp_path / "model.py"
    model.write_text(BUILT, encoding="utf-8")
    traceback = traceback_for(model).replace("line 20", "line 26").replace("clip_gradient(lo, hi, x)", "f(x, SIZES)")
    code, out = run(traceback)
    assert code == 0, out
    assert out.splitlines()[2].startswith("  position 1: array-valued — an array is passed at a call site (`SIZES`)")
