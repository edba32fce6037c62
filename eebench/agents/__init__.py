"""Baseline agents (random, frontier, oracle) and the loop that plays them into canonical trajectories."""

from eebench.agents.baselines import AGENTS, FrontierAgent, OracleAgent, RandomAgent, make_agent
from eebench.agents.play import check_agent, play_episode

__all__ = ["AGENTS", "FrontierAgent", "OracleAgent", "RandomAgent", "check_agent", "make_agent", "play_episode"]
