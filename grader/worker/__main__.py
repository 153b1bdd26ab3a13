"""`python -m grader.worker`: how every sandbox starts its worker."""

from grader.worker.serve import main

main()
