"""Classroom assignments: student copies with stubbed backward passes, and their grader.

    make_assignment(out, parts=None)          write a student copy into `out`
    grade_assignment(dir, json_out=None)      grade one: per-part table (and JSON)

An assignment part is the set of solution regions of one name, marked in the
package's sources by one-line comments `# BEGIN SOLUTION <part>` / `# END SOLUTION`
(see markers.py). The grader (grade.py) runs each part's tasks in a worker
process of its own on the student's copy (worker.py: time and memory limits,
no reference code importable), with stand-ins for the layers of other parts
(standins.py), and compares the arrays it returns with the reference's itself
(parts.py): only the right arrays score.

Import what you use from its module (`from numpy_transformer.course.assignment.make import
make`): this package's own import is light (the part names only), so that the command line
can list the parts without loading the grader.
"""

from .registry import PARTS

__all__ = ["PARTS"]
