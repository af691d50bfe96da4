"""frontdoor self-benchmark helpers (used by bench/run)."""
