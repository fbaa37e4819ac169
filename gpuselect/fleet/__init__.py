"""Beyond one machine: a fleet check launched by torchrun (detect, health, collective bandwidth on
every rank, one report on rank 0) and the measured interconnect the estimator can use.

The core here imports no torch at module level; ``gpuselect.fleet.run`` imports it inside the
run, and ``gpuselect.fleet.collectives`` takes the torch modules as arguments."""
