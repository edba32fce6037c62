"""Replay trajectories in their instances, compute the papers' metrics, store them in DuckDB."""

from eebench.evaluator.grade import Bench, GradeReport, grade_files
from eebench.evaluator.park import METRIC_VERSION, ParkTables, Replay, Segment, replay, step_columns
from eebench.evaluator.store import SCHEMA_VERSION, Exported, QueryResult, Replaced, export, query, query_rows

__all__ = ["METRIC_VERSION", "SCHEMA_VERSION", "Bench", "Exported", "GradeReport", "ParkTables", "QueryResult",
           "Replaced", "Replay", "Segment", "export", "grade_files", "query", "query_rows", "replay", "step_columns"]
