"""What Lookout's code imports is what ``pip install .`` installs.

``python3 scripts/bootstrap.py run`` installs ``[project] dependencies`` only (no dev
tools), so a third-party module the code imports but pyproject.toml does not declare
works in the test venv (some dev tool or another package pulled it in) and fails on a
device. Each import in device/, models/, tools/ and live/ is read from the source (the
AST, function bodies included) and mapped to the distribution that installs it.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata as metadata
import re
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("device", "models", "tools", "live")

# Imported only in the functions that use them (importing the module needs neither), the
# first use inside ``try: ... except ImportError`` that says what to install.
OPTIONAL = {
    # `lookout report`: the report extra (pip install matplotlib).
    "matplotlib": "report",
    # The second detector backend: the openvino extra (pip install 'lookout[openvino]').
    "openvino": "openvino",
    # The Pi camera module: Raspberry Pi OS's python3-picamera2 (apt), never PyPI.
    "picamera2": "apt",
}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, requirement
    return canonical(match.group(1))


def project() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as f:
        table: dict[str, Any] = tomllib.load(f)["project"]
    return table


def imports(tree: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """Each absolute import's dotted name (``from google import genai``: google.genai)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                yield f"{node.module}.{alias.name}", node


def inside_a_function(tree: ast.AST, target: ast.AST) -> bool:
    return any(
        isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and any(target is n for n in ast.walk(node))
        for node in ast.walk(tree)
    )


def guarded_by_import_error(tree: ast.AST, target: ast.AST) -> bool:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        if not any(target is n for statement in node.body for n in ast.walk(statement)):
            continue
        for handler in node.handlers:
            kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            if any(
                isinstance(kind, ast.Name) and kind.id in ("ImportError", "ModuleNotFoundError")
                for kind in kinds
            ):
                return True
    return False


Place = tuple[Path, ast.AST, ast.AST, str]  # file, its tree, the import, the dotted name


def third_party() -> dict[str, list[Place]]:
    """Top-level module -> where it is imported."""
    found: dict[str, list[Place]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            for module, node in imports(tree):
                top = module.split(".")[0]
                if top in sys.stdlib_module_names or top in PACKAGES or top == "__future__":
                    continue
                found.setdefault(top, []).append((path, tree, node, module))
    return found


@functools.cache
def _owners() -> dict[str, list[str]]:
    # Reading every installed distribution's files takes seconds: once per run, not per import.
    return dict(metadata.packages_distributions())


@functools.cache
def distribution_of(module: str) -> str | None:
    """The distribution that installs ``module`` (a namespace package: its subpackage's)."""
    owners = _owners().get(module.split(".")[0], [])
    if len(owners) <= 1 or "." not in module:
        return canonical(owners[0]) if owners else None
    parts = module.split(".")[:2]
    for owner in owners:
        files = metadata.distribution(owner).files or []
        if any(tuple(Path(str(f)).parts[:2]) == tuple(parts) for f in files):
            return canonical(owner)
    return None


def test_every_third_party_module_the_code_imports_is_a_declared_dependency() -> None:
    table = project()
    declared = {requirement_name(r) for r in table["dependencies"]}
    extras = table["optional-dependencies"]
    problems = []
    modules = third_party()
    assert {"numpy", "cv2", "google", "pydantic"} <= set(modules)  # the walk found imports
    for top, places in sorted(modules.items()):
        if top in OPTIONAL:
            extra = OPTIONAL[top]
            files = {path: tree for path, tree, _, _ in places}
            for path, tree in files.items():
                name = str(path.relative_to(ROOT))
                nodes = [node for p, _, node, _ in places if p == path]
                if any(not inside_a_function(tree, node) for node in nodes):
                    problems.append(f"{top}: optional, but imported when {name} is")
                if not any(guarded_by_import_error(tree, node) for node in nodes):
                    problems.append(f"{top}: optional, but {name} has no `except ImportError`")
            if extra != "apt" and top not in {requirement_name(r) for r in extras[extra]}:
                problems.append(f"{top}: not in the [{extra}] extra")
            continue
        by_dist: dict[str | None, set[str]] = {}
        for path, _, _, module in places:
            by_dist.setdefault(distribution_of(module), set()).add(str(path.relative_to(ROOT)))
        for dist, where in sorted(by_dist.items(), key=lambda item: str(item[0])):
            if dist is None:
                problems.append(f"{top}: imported in {sorted(where)}, installed by nothing here")
            elif dist not in declared:
                problems.append(
                    f"{top} ({dist}): imported in {sorted(where)}, not in [project] dependencies"
                )
    assert not problems, "\n".join(problems)


def test_the_dev_tools_are_not_what_running_installs() -> None:
    """`bootstrap.py run` needs none of these: they are the test command's (the `dev` extra)."""
    table = project()
    declared = {requirement_name(r) for r in table["dependencies"]}
    for tool in ("pytest", "ruff", "mypy", "playwright", "onnx", "matplotlib", "hypothesis"):
        assert tool not in declared, tool
