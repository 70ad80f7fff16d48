"""gacost: which GPU to rent, from whom, and which micro-batch x grad-accum split to run.

Every ``gacost.<name>`` lives in the checkout's top-level folder ``<name>/``; this folder
(``src/gacost/``) is only the package face: the version, ``python -m gacost`` and
``py.typed``. Layers, each importing only the ones below it (enforced by import-linter,
see ``.importlinter``):

    gacost.commands       the command line: ``cli`` (parsing, the one ``except
                          GacostError``), one module per command (its flags, its run and
                          its text, JSON and CSV), and the modules they share
    gacost.launch         the recommended plan as a SkyPilot task
    gacost.advisor        deciding: time and memory model, estimates, planner, break-even
    gacost.pricing  gacost.calibration
                          price loading and measuring; independent of each other
    gacost.base           records every layer exchanges (Job, Offer, GpuSpec, ModelArch,
                          Profile), the error tree, the GPU table, model configs, the
                          atomic writer

``gacost.data`` holds the embedded data files. Nothing here imports torch or httpx at
module level.
"""

__version__ = "0.1.0"
