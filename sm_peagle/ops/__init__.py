"""The SDK's operations, one mixin class per module over `session.Session`: inventory and
removal (`EndpointOps`), changes, deploy, measurement, catalog (`CatalogOps`),
infrastructure code (`IacOps`), drafter heads (`DrafterOps`), doctor (`DoctorOps`).
`sm_peagle.Client` composes them; each `peagle` command calls one of its methods, and the
CLI only parses and renders.

The module-level names (`sm_peagle.ls()`, `sm_peagle.gc()`, …) are the default client's
methods (`sm_peagle/client.py`).
"""
