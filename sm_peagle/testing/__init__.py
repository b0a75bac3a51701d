"""Deprecated: the moto harness and pytest plugin moved to ``peagle_sandbox.testing`` (the
``peagle-sandbox`` distribution). These names keep working for one release, with a notice."""
