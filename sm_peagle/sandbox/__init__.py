"""A local SageMaker on loopback: moto's control plane plus a simulated runtime.

``python -m sm_peagle.sandbox.server`` runs it in one process; ``manager`` starts, finds and
stops that process and points boto3 at it; ``peagle --sandbox <command>`` does both. Nothing
here talks to AWS, and every generated token is SIMULATED (see ``engine`` for the model).

This package's ``__init__`` imports nothing, so ``peagle --help`` stays fast.
"""
