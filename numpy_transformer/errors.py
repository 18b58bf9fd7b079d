"""The project's exceptions: one for bad input, one for a run that diverged.

Every check of a user's input (an argument, a file, a checkpoint, an option)
raises `InputError` (or `InputTypeError` for the wrong kind of thing), with a
message that names the input, what was expected and what was given:

    InputError: x: expected last dimension 512 (d_model), got shape (2, 7, 256)

They subclass ValueError and TypeError, so `except ValueError` still catches
them. The command line turns exactly these (and OS errors such as a missing
file) into a one-line `error: ...` and exit status 2; any other exception is a
bug in the package, reported as one (exit status 1).
"""


class InputError(ValueError):
    """A bad input value: the message says which input, what was expected and what came."""


class InputTypeError(InputError, TypeError):
    """A bad input of the wrong kind (e.g. a list where an array is needed)."""


class TrainingDiverged(RuntimeError):
    """The loss (or the gradient norm) became NaN or infinite."""
