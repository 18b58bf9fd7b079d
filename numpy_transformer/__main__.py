"""`python -m numpy_transformer ...`: see cli/__init__.py.

Ctrl-C or SIGTERM at any moment, the imports included, ends in one line and no traceback:
`interrupted` (exit 130) or `terminated` (exit 143) (the package's __init__ does the same
while it imports NumPy, before this file runs). A standard output that cannot take what
was printed (a full disk, /dev/full) is named as such."""

try:
    from .system.files import name_standard_output
    from .system.interrupts import handle_sigterm
    handle_sigterm()
    name_standard_output()
    from .cli import main, stdout_flushed
    status = stdout_flushed(main())
except KeyboardInterrupt as err:
    from .system.interrupts import interrupted
    status = interrupted(err)
raise SystemExit(status)
