"""Build-time step tracing (torch required): the meta-device tracer and the script that writes
the presets' traces as package data. Run ``python -m gpuselect.workloads.trace_build [IDS...]``.
"""
