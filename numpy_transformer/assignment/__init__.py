"""Classroom assignments: student copies with stubbed backward passes, and their grader.

    make_assignment(out, parts=None)          write a student copy into `out`
    grade_assignment(dir, json_out=None)      grade one: per-part table (and JSON)

An assignment part is the set of solution regions of one name, marked in the
package's sources by one-line comments `# BEGIN SOLUTION <part>` / `# END SOLUTION`
(see markers.py). The grader checks each part with the float64 gradient checker
and targeted checks (parts.py and checks_*.py), in a separate process that
imports the student's copy, with every other part swapped for the reference.
"""

from .grade import grade, grade_assignment
from .make import make, make_assignment, reveal
from .parts import PARTS

__all__ = ["PARTS", "grade", "grade_assignment", "make", "make_assignment", "reveal"]
