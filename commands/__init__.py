"""The ``gacost`` command line. :mod:`~gacost.commands.cli` is the entry point (``main``:
parse, dispatch, print, and the one ``except GacostError``).

One module per command holds its flags (``register``), its ``run`` and its renderers (text,
JSON and CSV from the same rows): ``recommend``, ``budget``, ``compare``, ``calibrate``,
``prices``, ``gpus``, ``models``. Commands never import each other (import-linter checks
it); what they share sits beside them: ``inputs`` (flags, the job, profiles, prices,
numbers), ``formats`` (output formats, tables, fitting the terminal), ``plans`` (plan
fields of the budget and compare reports), ``plot`` (``recommend --plot``) and ``sky``
(``recommend --sky-task``/``--launch``).
"""
