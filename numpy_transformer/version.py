"""The package's version, in a module of its own so that any layer can quote it."""

__version__ = "0.2.0"
