"""Calibration of the reading model (``lens calibrate``): labelled readings on questions set aside from every
evaluation (``run``), the fitted model and its report (``fit``), and both on the shipped calibration set for the
configured endpoint, written to the user's config (``endpoint``)."""
