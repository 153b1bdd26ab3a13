"""AMP Dojo in Jupyter.

    %load_ext amp_dojo
    %grade_show autocast          # the lesson, its task, and the starter in a new cell
    %%grade autocast              # first line of a cell: grades the rest of the cell

The graded cell is not run by the kernel: it is graded in a sandbox, as
`grader check` grades a file (see amp_dojo.magics)."""

from __future__ import annotations

last_result = None  # the GradingResult of the latest %%grade in this kernel


def load_ipython_extension(ipython) -> None:
    from amp_dojo.magics import GradeMagics

    ipython.register_magics(GradeMagics)
