"""See the results: a self-contained HTML report and static figures, drawn from a DuckDB results file."""

from eebench.report.data import Results, load_results
from eebench.report.html import REPORT_KIND, Written, write_report

__all__ = ["REPORT_KIND", "Results", "Written", "load_results", "write_report"]
