"""Code that runs inside the serving container (see containers/vllm/).

Nothing is imported here, so `python3 -m sm_peagle.container.entrypoint` loads only the
entrypoint and what it needs, and starts (or refuses) vLLM within seconds.
"""
