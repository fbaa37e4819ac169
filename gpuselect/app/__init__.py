"""The workflows every face shares (no Qt, no torch at import): this machine (detect + health +
last benchmark), the estimate for this machine, the report, and the user's settings applied
(prices, currency, redaction). The CLI, the GUI and the report call these; no face imports
another face."""
