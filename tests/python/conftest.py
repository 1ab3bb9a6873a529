"""pytest setup for the gpuplan Python package tests.

The tests import `gpuplan` from wherever the interpreter finds it: scripts/test-python.sh
installs the package into build/<preset>/venv and runs pytest from outside the source
tree, and sets GPUPLAN_EXPECT_INSTALLED so test_install.py checks that the installed
copy (not python/gpuplan in the repository) was imported.
"""

import os
from pathlib import Path

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")  # headless, also for the notebook kernel

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def repo() -> Path:
    """The repository root."""
    return REPO


@pytest.fixture(scope="session")
def gp():
    """The gpuplan package."""
    import gpuplan

    return gpuplan
