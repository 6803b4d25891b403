"""examples/nodes.ipynb runs end to end: every cell, in a fresh kernel on this venv's Python.

The notebook asserts what each cell shows, so a cell that errors is a regression in the
pieces it calls by hand (the scripted model, the tools, the agent's nodes, the supervisor).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NOTEBOOK = EXAMPLES / "nodes.ipynb"
ANSI = re.compile(r"\x1b\[[0-9;]*m")  # IPython colours its tracebacks

pytestmark = pytest.mark.slow


def _read() -> nbformat.NotebookNode:
    # nbformat has no type hints.
    notebook: nbformat.NotebookNode = nbformat.read(NOTEBOOK, as_version=4)  # type: ignore[no-untyped-call]
    return notebook


def _stored_outputs(notebook: nbformat.NotebookNode) -> list[int]:
    return [
        index
        for index, cell in enumerate(notebook.cells)
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count"))
    ]


def test_the_notebook_is_saved_clean() -> None:
    notebook = _read()
    nbformat.validate(notebook)
    assert notebook.metadata["kernelspec"]["name"] == "python3"
    assert _stored_outputs(notebook) == [], "save examples/nodes.ipynb without outputs"


def test_the_notebook_runs() -> None:
    notebook = _read()
    # First, in the kernel itself: it must run this venv's Python, or the notebook would
    # test whatever outlast another environment has installed.
    check = nbformat.v4.new_code_cell(  # type: ignore[no-untyped-call]
        f"import sys\nassert sys.prefix == {sys.prefix!r}, f'kernel runs {{sys.executable}}'"
    )
    notebook.cells.insert(0, check)
    client = NotebookClient(
        notebook,
        kernel_name="python3",
        timeout=60,
        startup_timeout=60,
        resources={"metadata": {"path": str(EXAMPLES)}},
    )
    error = None
    try:
        client.execute()
    except CellExecutionError as exc:
        error = ANSI.sub("", str(exc))
    if error is not None:  # failed out here, so pytest does not print the chained exception
        pytest.fail(f"examples/nodes.ipynb: a cell failed\n{error}", pytrace=False)
    ran = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert all(cell.get("execution_count") for cell in ran), "some cells did not run"
