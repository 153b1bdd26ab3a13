"""Tools for the people who write lessons: `grader validate` grades a lesson's
reference, its baseline, its examples and generated wrong solutions (mutants)
and says everything that is wrong with the lesson at once."""
