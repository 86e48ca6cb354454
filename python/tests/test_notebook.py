import time

import nbformat
from conftest import EXAMPLES
from nbclient import NotebookClient


def test_the_quickstart_notebook_runs():
    nb = nbformat.read(EXAMPLES / "quickstart.ipynb", as_version=4)
    started = time.monotonic()
    # Raises CellExecutionError, with the cell and its traceback, if any cell fails.
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(EXAMPLES)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert any("image/png" in o.get("data", {}) for o in outputs), "the plots were drawn"
    print(f"notebook ran in {time.monotonic() - started:.1f} s")
