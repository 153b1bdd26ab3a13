"""AMP Dojo in Jupyter.

    %load_ext amp_dojo
    %grade_show autocast          # the lesson, its task, and the starter in a new cell
    %%grade autocast              # first line of a cell: grades the rest of the cell

The graded cell is not run by the kernel: it is graded in a sandbox, as
`grader check` grades a file (see amp_dojo.magics)."""

from __future__ import annotations


def __getattr__(name: str):
    """`amp_dojo.last_result`: the GradingResult of the latest %%grade in this kernel, None before one. It lives
    in amp_dojo.magics, which sets it, so that the magics need not import this package back."""
    if name == "last_result":
        from amp_dojo import magics

        return magics.last_result
    raise AttributeError(f"module 'amp_dojo' has no attribute {name!r}")


def load_ipython_extension(ipython) -> None:
    from amp_dojo.magics import GradeMagics

    ipython.register_magics(GradeMagics)
