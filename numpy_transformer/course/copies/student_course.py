"""The course/__init__.py of a student copy: the part names and the local check stay, and
every module of the teacher's grader that the copy leaves out (copies/, classroom/,
sandbox/, selftest/, grading/'s scoring) is a stand-in saying where grading runs.

    STUDENT_COURSE_INIT     the file's text (make.py writes it into the copy)
"""

import textwrap

GRADED_ELSEWHERE = ("this is a student copy: its grading runs from the teacher's installed "
                    "numpy_transformer (`python -m numpy_transformer assignment grade DIR`, "
                    "run outside the copy); check your parts here with "
                    "`python -m numpy_transformer assignment check [PART ...]` (the grader's "
                    "kind of verdict on public inputs) and your gradients with "
                    "`python -m numpy_transformer gradcheck --layers-only`")
STUDENT_INIT = '''"""A student copy's course: the names of the parts, the local check, no grader.

{doc}

The teacher's grader (its checks, the copy maker, the sandbox, the class tools)
is not in this copy. Importing any of its modules here gives a stand-in whose
every function raises that message as an InputError, so each `assignment`
command ends with `error: ...` whatever the teacher's version of the package.
"""

import importlib.abc
import importlib.util
import sys

from ..errors import InputError
from .parts import PARTS, TITLES  # noqa: F401

MESSAGE = {message!r}


def _refuse(*args, **kwargs):
    raise InputError(MESSAGE)


class _GradedElsewhere(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Last on sys.meta_path: a module of this package that is not here is a stand-in
    (a package, so that a missing room's modules are stand-ins too)."""

    def find_spec(self, name, path=None, target=None):
        if name.startswith(__name__ + "."):
            return importlib.util.spec_from_loader(name, self, is_package=True)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        def stand_in(attr):
            if attr.startswith("__"):
                raise AttributeError(attr)
            return _refuse
        module.__getattr__ = stand_in


sys.meta_path.append(_GradedElsewhere())
'''
STUDENT_COURSE_INIT = STUDENT_INIT.format(message=GRADED_ELSEWHERE,
                                          doc=textwrap.fill(GRADED_ELSEWHERE + ".", 78))
