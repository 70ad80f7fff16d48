"""One module per ``gacost`` command; each registers its parser and never imports another
command (shared input loading lives in :mod:`gacost.commands.inputs`)."""
