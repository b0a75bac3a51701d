"""`peagle adopt`, pure: the smallest spec that plans to what is deployed (`spec`), what
one spec cannot represent (`refusals`), and the field-by-field comparison (`compare`).

This `__init__` imports nothing.
"""
