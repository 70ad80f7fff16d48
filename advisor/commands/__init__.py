"""One module per ``gacost`` subcommand: ``register(subparsers)`` and ``run(args) -> str``."""
