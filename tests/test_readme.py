"""The README's generated parts and commands stay true."""

from __future__ import annotations

from conftest import ROOT

from vjp_migrate.codes import rules_markdown


def test_rule_table_is_generated_from_the_codes() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("<!-- rules:start -->\n", 1)[1].split("\n<!-- rules:end -->", 1)[0]
    assert table == rules_markdown()


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    command = "pip install -e '.[test]' && pytest"
    assert command in readme
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pip install . && vjp-migrate fix --diff examples/" in readme


def test_readme_shows_the_latest_benchmark_table() -> None:
    def table(path: str) -> str:
        text = (ROOT / path).read_text(encoding="utf-8")
        return text.split("<!-- benchmark:start -->\n", 1)[1].split("<!-- benchmark:end -->", 1)[0]

    shown = table("README.md")
    assert shown == table("docs/performance.md")  # both written by benchmarks/run.py --markdown
    assert "| 2. fix, dense tree" in shown and "| 1. check, big tree" in shown


def test_the_pipeline_map_names_every_module_at_the_stage_its_docstring_gives() -> None:
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Development", 1)[1]
    stage_of: dict[str, str] = {}
    for row in re.findall(r"^\| ([0-9]+[a-z]?|-) \| (.+?) \|", section, flags=re.MULTILINE):
        for module in re.findall(r"`([a-z_0-9]+\.py)`", row[1]):
            stage_of[module] = row[0]
    modules = sorted(p.name for p in (ROOT / "vjp_migrate").glob("*.py") if not p.name.startswith("__"))
    assert sorted(stage_of) == modules
    for name in modules:
        first = (ROOT / "vjp_migrate" / name).read_text(encoding="utf-8").splitlines()[0]
        said = re.match(r'"""Stage ([0-9]+[a-z]?):', first)
        if said is not None:
            assert said.group(1) == stage_of[name], f"{name}: docstring says stage {said.group(1)}"
