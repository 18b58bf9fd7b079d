"""Grading: the one table of scenarios (harness.py) and the checks that name them, run by
the grader with stand-ins (scoring.py) and by a student copy's `assignment check`
(local_check.py), both judging arrays alike (judgement.py); a wrong array's diagnosis
(diagnose.py, known_slips*.py).

A student copy holds harness.py, steps.py, scenarios_*.py, judgement.py, diagnose.py and
local_check.py (copies/make.py); a grading worker loads harness.py, steps.py, scenarios_*.py and
standins.py by path (sandbox/runner.py), so these use no module outside this room.
"""
