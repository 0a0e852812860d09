"""The import rules of docs/architecture.md, held against every module of testbed/.

Imports inside functions and under TYPE_CHECKING count: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "testbed"
PAGE = ROOT / "docs" / "architecture.md"
ROW = re.compile(r"^\| `(\w+)` \| (\w+) \|(.*)\|$")


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, dotted
    line: int
    target: str  # the imported module (or package), dotted

    def __str__(self) -> str:
        return f"{self.module} (line {self.line}) imports {self.target}"


def rules(page: str) -> dict[str, set[str]]:
    """Package -> the packages it may import: its row, the ground and itself; ``*`` is all but the entries."""
    rows = {m[1]: (m[2], set(re.findall(r"`([\w*]+)`", m[3]))) for m in map(ROW.match, page.splitlines()) if m}
    ground = {p for p, (layer, _) in rows.items() if layer == "ground"}
    below_entries = {p for p, (layer, _) in rows.items() if layer != "entry"}
    return {p: (below_entries if "*" in names else names) | ground | {p} for p, (_, names) in rows.items()}


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(sources: dict[str, tuple[str, bool]]) -> list[Import]:
    """Every testbed import of every module; ``sources`` maps a dotted name to (source, is a package)."""
    found = []
    for module, (source, is_package) in sources.items():
        package = module if is_package else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = (package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else [])
                origin = ".".join(base + ([node.module] if node.module else []))
                # ``from . import charts`` imports the submodule, not the package's face
                subs = [f"{origin}.{a.name}" for a in node.names]
                targets = [s for s in subs if s in sources] or [origin]
            else:
                continue
            found += [Import(module, node.lineno, t) for t in targets
                      if t.split(".")[0] == "testbed" and t != module]
    return found


def top(dotted: str) -> str:
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else ""


def against(found: list[Import], allowed: dict[str, set[str]]) -> list[str]:
    return [f"{i}: {top(i.module)} may import {', '.join(sorted(allowed[top(i.module)]))}"
            for i in found if top(i.module) in allowed and top(i.target) not in allowed[top(i.module)]]


def cycle(found: list[Import]) -> str | None:
    """One ring of modules importing each other, each step with its line; None if there is none."""
    graph: dict[str, set[str]] = {}
    lines = {}
    for i in found:
        graph.setdefault(i.module, set()).add(i.target)
        lines[i.module, i.target] = i.line
    try:
        TopologicalSorter(graph).prepare()
    except CycleError as exc:
        ring = exc.args[1][::-1]  # [a, ..., a], each importing the next
        return " -> ".join(f"{a} (line {lines[a, b]})" for a, b in zip(ring, ring[1:])) + f" -> {ring[0]}"
    return None


def sources_of_testbed() -> dict[str, tuple[str, bool]]:
    return {module_name(f): (f.read_text(), f.name == "__init__.py") for f in sorted(PACKAGE.rglob("*.py"))}


def test_every_package_of_testbed_has_a_row_and_every_row_a_package():
    allowed = rules(PAGE.read_text())
    packages = {top(m) for m in sources_of_testbed()} - {""}
    assert packages - set(allowed) == set(), "packages without a row in docs/architecture.md"
    assert set(allowed) - packages == set(), "rows in docs/architecture.md without a package"


def test_no_module_imports_against_the_direction_of_docs_architecture():
    problems = against(imports(sources_of_testbed()), rules(PAGE.read_text()))
    assert not problems, "imports against docs/architecture.md:\n" + "\n".join(problems)


def test_no_modules_import_each_other():
    ring = cycle(imports(sources_of_testbed()))
    assert ring is None, f"modules importing each other: {ring}"


def test_the_rules_catch_an_upward_import_a_lazy_one_and_a_cycle():
    """The checks themselves: an import the page forbids, even inside a function, and a ring of two."""
    allowed = rules(PAGE.read_text())
    bad = {
        "testbed.scenario.runner": ("def judge():\n    from ..report import render_run\n", False),
        "testbed.report.run_report": ("from ..scenario.loader import load\n", False),
        "testbed.analysis.a": ("from .b import x\n", False),
        "testbed.analysis.b": ("from . import a\n", False),
    }
    found = imports(bad)
    assert against(found, allowed) == [
        "testbed.scenario.runner (line 2) imports testbed.report: scenario may import " + ", ".join(sorted(
            allowed["scenario"])),
        "testbed.report.run_report (line 1) imports testbed.scenario.loader: report may import " + ", ".join(sorted(
            allowed["report"])),
    ]
    assert "report" not in allowed["scenario"] and "scenario" not in allowed["report"]
    ring = cycle(found)
    assert ring is not None and "testbed.analysis.a" in ring and "testbed.analysis.b" in ring


# ---- inside the analysis: its parts (subfolders and top modules) and who may import whom ----------------------

PART_ROW = re.compile(r"^\| `(\w+)` \|(.*)\|$")


def analysis_rules(page: str) -> dict[str, set[str]]:
    """Part of testbed.analysis -> the parts it may import (itself included; ``*``: every part)."""
    section = page.split("## Inside the analysis", 1)[1].split("\n## ", 1)[0]
    rows = {m[1]: set(re.findall(r"`([\w*]+)`", m[2])) for m in map(PART_ROW.match, section.splitlines()) if m}
    parts = set(rows)
    return {p: (parts if "*" in names else names) | {p} for p, names in rows.items()}


def part(dotted: str) -> str | None:
    """``testbed.analysis.group.pauses`` -> ``group``; None outside the analysis or for its face."""
    parts = dotted.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["testbed", "analysis"] else None


def test_every_part_of_the_analysis_has_a_row_and_imports_only_what_its_row_allows():
    allowed = analysis_rules(PAGE.read_text())
    sources = sources_of_testbed()
    parts = {part(m) for m in sources} - {None}
    assert parts - set(allowed) == set(), "parts of testbed/analysis without a row in docs/architecture.md"
    assert set(allowed) - parts == set(), "rows of the analysis's table without a part"
    problems = [f"{i}: {part(i.module)} may import {', '.join(sorted(allowed[part(i.module)]))}"
                for i in imports(sources) if part(i.module) and part(i.target) and part(i.target) not in allowed[part(i.module)]]
    assert not problems, "imports against docs/architecture.md's analysis table:\n" + "\n".join(problems)


# ---- client families: each one's runners in a folder of its own (docs/architecture.md, "Adding a client family") --

def family_folder(dotted: str) -> str | None:
    """``testbed.members.java.host`` -> ``java`` when ``members/java/`` is a family's folder; None otherwise."""
    parts = dotted.split(".")
    if len(parts) > 3 and parts[:2] == ["testbed", "members"] and (PACKAGE / "members" / parts[2]).is_dir():
        return parts[2]
    return None


def test_every_family_has_its_folder_and_no_family_imports_another():
    from testbed.clients import FAMILIES
    declared = {runner.module.split(".")[2] for f in FAMILIES.values()
                for runner in (f.member, f.share, f.streams) if runner is not None}
    folders = {p.name for p in (PACKAGE / "members").iterdir() if (p / "__init__.py").is_file()}
    assert declared == folders, "each family's runners live in testbed/members/<its folder>/, and nothing else does"
    problems = [str(i) for i in imports(sources_of_testbed())
                if family_folder(i.target) and family_folder(i.module) not in (None, family_folder(i.target))]
    assert not problems, "a family's folder imports another family's:\n" + "\n".join(problems)
