"""The grader tested on itself: a catalogue of typical backward-pass mistakes (mistakes.py),
each a changed right body (right_bodies.py), and the words that name each one's cause
(mistake_causes.py). Only the tests import this room."""
