"""gacost: which GPU to rent, from whom, and which micro-batch x grad-accum split to run.

Layers, each importing only the ones below it (enforced by import-linter, see
``.importlinter``):

    gacost.cli            argument parsing, the one ``except GacostError`` (main)
    gacost.commands       one module per command: read inputs, call a layer, render
    gacost.reports        one module per report: text, JSON and CSV from the same data
    gacost.advisor        deciding: time and memory model, estimates, planner, break-even
    gacost.pricing  gacost.calibration
                          measuring and price loading; independent of each other
    gacost.base           records every layer exchanges (Job, Offer, GpuSpec, ModelArch,
                          Profile), the error tree, the GPU table, model configs, the
                          atomic writer

``gacost.data`` holds the embedded data files. Nothing here imports torch or httpx at
module level.
"""

__version__ = "0.1.0"
