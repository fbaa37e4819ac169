"""gpuselect: what hardware do I need to train this, how long will it take, what will it cost?

The domain core (hardware, health, bench, catalog, workloads, estimate, report) is plain typed
Python: importing it loads neither Qt nor torch. Faces: ``gpuselect.cli``, ``gpuselect.gui``
and the report writers.
"""

__version__ = "0.1.0"
