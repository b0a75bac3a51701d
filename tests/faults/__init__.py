"""The fault-injection suite (issue 23): a lag proxy in front of the sandbox, and signals
sent the moment a resource exists, at every mutating step of deploy, apply, update,
delete and adopt. `PEAGLE_FAULTS=all python -m pytest -q tests/faults` runs every case."""
