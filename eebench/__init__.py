"""eebench: declarative benchmark specs and an offline evaluator of how LLM agents explore and exploit."""

__version__ = "0.1.0"
