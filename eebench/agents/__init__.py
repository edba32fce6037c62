"""Baseline agents (random, frontier, oracle) and the loop that plays them into canonical trajectories."""

from eebench.agents.baselines import AGENTS, FrontierAgent, OracleAgent, RandomAgent, make_agent
from eebench.agents.play import play_episode

__all__ = ["AGENTS", "FrontierAgent", "OracleAgent", "RandomAgent", "make_agent", "play_episode"]
