"""Health rules over a hardware snapshot: ``evaluate(snapshot) -> HealthReport``."""
