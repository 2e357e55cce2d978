"""Reward models: loading, Bradley–Terry training over partial rankings (§5), scoring, the LLM judge and the
zoo that trains each model once. Works on any records file; never imports the simulated world."""
