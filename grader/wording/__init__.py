"""Everything the grader tells people, in their language: the message catalog
(catalog.py, with translations/), measured values and stages in words
(phrases.py), the terminal report, and the result file formats."""
