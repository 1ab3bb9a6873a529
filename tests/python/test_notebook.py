"""examples/notebooks/will_it_fit.ipynb runs headless, top to bottom, without a cell error.

The kernel is this interpreter (a kernelspec written to a temporary JUPYTER_PATH),
so the notebook imports the same gpuplan the other tests import: the installed one
under scripts/test-python.sh, not /usr/share/jupyter's system python3 kernel.
"""

import json
import os
import sys

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")


def test_will_it_fit_notebook_executes(repo, tmp_path, monkeypatch):
    kernel_dir = tmp_path / "jupyter" / "kernels" / "gpuplan-test"
    kernel_dir.mkdir(parents=True)
    (kernel_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "gpuplan test", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    monkeypatch.setenv("PYDEVD_DISABLE_FILE_VALIDATION", "1")

    path = repo / "examples" / "notebooks" / "will_it_fit.ipynb"
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(nb, kernel_name="gpuplan-test", timeout=300,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError on the first failing cell

    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    text = "".join(o.get("text", "") for o in outputs if o.get("output_type") == "stream")
    # 13B full fine-tuning does not fit in 24 GB; QLoRA with checkpointing does.
    import re

    assert re.search(r"^full +[0-9.]+ GiB  fits=False$", text, re.M)
    assert re.search(r"^qlora +[0-9.]+ GiB  fits=True$", text, re.M)
    html = [o["data"]["text/html"] for o in outputs if "text/html" in o.get("data", {})]
    assert any("Memory per GPU" in h or "Weights" in h for h in html)  # the estimate's _repr_html_
    # The kernel imported the same gpuplan as this process.
    client2 = nbclient.NotebookClient(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import gpuplan; print(gpuplan.__file__)")]), kernel_name="gpuplan-test", timeout=60)
    nb2 = client2.execute()
    import gpuplan

    assert nb2.cells[0].outputs[0]["text"].strip() == gpuplan.__file__
    assert os.path.exists(gpuplan.__file__)
