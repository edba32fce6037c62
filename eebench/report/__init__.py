"""See the results: a self-contained HTML report and static figures, drawn from a DuckDB results file.

The names below are loaded on first use (PEP 562), so that `eebench.report.kinds`, which the CLI reads for every
command's help, does not import DuckDB and NumPy with it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from eebench.lazy import names_on_first_use

if TYPE_CHECKING:
    from eebench.report.data import Results, load_results
    from eebench.report.html import REPORT_KIND, Written, write_report

_HOMES = {"Results": "data", "load_results": "data", "REPORT_KIND": "html", "Written": "html", "write_report": "html"}
__all__ = sorted(_HOMES)


__getattr__ = names_on_first_use(__name__, _HOMES)
