"""gacost's embedded data: the GPU table, model configs, a price snapshot, reference profiles.

Installed as the package ``gacost.data``; read it through :mod:`gacost.base`
(``gpu_table``, ``models``, ``embedded``) and :mod:`gacost.pricing.snapshot`.
"""
