"""The package as installed: stubs, py.typed, and that the installed copy is the one imported."""

import ast
import os
from pathlib import Path

import pytest

import gpuplan as gp
from gpuplan import _core


def test_installed_copy_is_imported():
    prefix = os.environ.get("GPUPLAN_EXPECT_INSTALLED")
    if not prefix:
        pytest.skip("GPUPLAN_EXPECT_INSTALLED not set (running against a build tree)")
    here = Path(gp.__file__).resolve()
    assert Path(prefix).resolve() in here.parents, here
    assert "site-packages" in here.parts


def test_typing_files_ship_with_the_package():
    pkg = Path(gp.__file__).parent
    assert (pkg / "py.typed").exists()
    assert (pkg / "_core.pyi").exists()


def test_core_stub_names_every_public_binding():
    stub = ast.parse((Path(gp.__file__).parent / "_core.pyi").read_text())
    declared = {n.name for n in stub.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    declared |= {t.id for n in stub.body if isinstance(n, ast.AnnAssign) for t in [n.target] if isinstance(t, ast.Name)}
    public = {n for n in dir(_core) if not n.startswith("_")} | {"__version__"}
    assert public - declared == set(), "bound in C++ but missing from _core.pyi"
    assert declared - public == set(), "declared in _core.pyi but not bound"
    # Every stubbed class lists the members the binding really has.
    for node in stub.body:
        if isinstance(node, ast.ClassDef) and not issubclass(getattr(_core, node.name), BaseException):
            names = {f.name for f in node.body if isinstance(f, ast.FunctionDef)}
            names |= {f.target.id for f in node.body if isinstance(f, ast.AnnAssign)}
            real = {n for n in dir(getattr(_core, node.name)) if not n.startswith("_")}
            assert real == names, node.name
