"""Prometheus metrics: GPU readings under DCGM-exporter's names and labels where they overlap,
``gpuselect_*`` for the rest (health findings, benchmark results, the catalog's spec ratio)."""
