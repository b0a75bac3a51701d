"""Pure planning: a `DeploymentSpec` in, the exact SageMaker requests out.

Nothing here (or reachable from here) imports boto3, botocore or rich, or makes a network
call: the spec models, the option mapping, the speculative-config builder, the vLLM
version facts, the plan and its sources, checks and scaling, and the request-shape
validator. `tests/unit/test_import_graph.py` holds the package to that. The only file
reads are the bundled catalog data and botocore's service-model JSON, read as data.

This `__init__` imports nothing, so importing a submodule costs only that submodule.
"""
