"""The teacher's side: grading one copy (grade.py, with honesty.py's reading of the answers),
the `assignment grade` command for many (grade_command.py, class_run.py), the class's
similarity report and summary page (similarity.py, class_report.py), Gradescope's results
and autograder (gradescope.py, autograder.py, autograder_run.py)."""
