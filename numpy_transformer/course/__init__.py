"""The course: the assignment (student copies and the grader), the lessons' website and the lessons' figures."""
