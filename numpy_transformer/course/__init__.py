"""The course around the core: the assignment (student copies, their grader, a class) and the lessons.

Rooms by concern; each imports only the rooms below it (import-linter's "The course's
rooms" contract in pyproject.toml), and the library never imports the course:

    selftest/   the grader tested on itself: a catalogue of mistakes and their causes
    classroom/  grading one copy or a class: grade, class runs, similarity, the report,
                Gradescope's results and autograder; the honesty reading of answers
    copies/     making a student copy: solution markers, stubs, formulas stripped from text
    grading/    the one table of scenarios and the checks, run on either side; scoring a
                part, diagnosing a wrong array, the stand-ins, the local check of a copy
    sandbox/    where a student's code runs: namespaces, a private root, limits, the worker
    parts.py    the assignment's parts and what a check of a part is (the bottom floor)
    lessons/    the lessons' website and figures (apart: they import only the library)

An assignment part is the set of solution regions of one name, marked in the core's
sources by one-line comments `# BEGIN SOLUTION <part>` / `# END SOLUTION` (copies/markers.py).

Import what you use from its module (`from numpy_transformer.course.copies.make import
make`): this package's own import is light, so that the command line can list the parts
(`course.parts`) without loading the grader.
"""
