"""The deployment spec: its pydantic models (`model`), loading from YAML/JSON with dotted
overrides (`loading`), the flat options of the CLI and SDK (`options`), and the spec
carried on resources as tags (`tags`).

This `__init__` imports nothing.
"""
