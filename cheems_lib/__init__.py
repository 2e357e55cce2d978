"""Cheems companion library."""
