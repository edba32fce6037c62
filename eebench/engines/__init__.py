"""Engines that run a grade elsewhere than in this process: Ray (engines/ray.py)."""
