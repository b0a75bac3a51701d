"""Inference-component hosting: the component specs, planning them (`hosting`: one model
per component, re-running `plan()`), their checks, and a change of one component's K or
mode.

This `__init__` imports nothing.
"""
