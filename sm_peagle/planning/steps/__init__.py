"""The steps of `plan()` (`planning/build.py` runs them in order): sources, the speculative
config, the environment, the checks (deployment, fit, drafter), the requests, scaling
and pools, and the offline validation of every request against botocore's model.

This `__init__` imports nothing.
"""
