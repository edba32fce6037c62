"""Replay trajectories in their instances, compute the papers' metrics, store them in DuckDB."""

from eebench.evaluator.grade import Bench, GradeReport, grade_files
from eebench.evaluator.park import METRIC_VERSION, ParkTables, Replay, Segment, replay, step_columns
from eebench.evaluator.store import SCHEMA_VERSION, query

__all__ = ["METRIC_VERSION", "SCHEMA_VERSION", "Bench", "GradeReport", "ParkTables", "Replay", "Segment",
           "grade_files", "query", "replay", "step_columns"]
