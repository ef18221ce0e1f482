"""Exit statuses of the ``casflow`` command (a module of its own, so that the
command can report a bad workflow without importing the engine)."""

EXIT_OK = 0
EXIT_PARTIAL = 1  # the run ended, but some documents failed, timed out or were not processed
EXIT_NOT_STARTED = 2  # nothing ran: invalid workflow, bad arguments, unusable output folder
# An interrupted run exits with 128 + the signal number: 130 (SIGINT), 143 (SIGTERM).

RUN_EXIT_STATUS = """\
exit status:
  0    every document succeeded (or was done by an earlier run)
  1    the run ended, but some documents failed, timed out or were not processed
       (run-report.json says which and what to do; the same command retries them)
  2    nothing ran: invalid workflow or arguments, output folder unusable, in use
       by another run, or holding a different workflow's outputs
  130  stopped by SIGINT (Ctrl-C)
  143  stopped by SIGTERM (Slurm, systemd, docker stop)
       (after 130 or 143 finished documents are kept; the same command resumes)
"""
