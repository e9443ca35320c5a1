"""Blackwell serving-failure knowledge base: records -> validated cells -> pages, search, exports."""
