"""The microbenchmark: ``run_benchmark(config, cancel)`` is a generator of progress events that
returns a :class:`BenchReport`. Torch is imported only when a benchmark runs."""
