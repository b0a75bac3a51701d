"""The SDK's operations beyond one endpoint handle: inventory, changes, measurement,
catalog, infrastructure code, drafter heads and the sandbox. Each `peagle` command calls one
function here (or on `sm_peagle.endpoint`); the CLI only parses and renders.

Names are re-exported lazily from `sm_peagle` itself (`sm_peagle.ls()`, `sm_peagle.gc()`, …).
"""
