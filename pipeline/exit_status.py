"""Exit statuses of the ``casflow`` command (a module of its own, so that the
command can report a bad workflow without importing the engine)."""

EXIT_OK = 0
EXIT_PARTIAL = 1  # the run ended, but some documents failed, timed out or were not processed
EXIT_NOT_STARTED = 2  # nothing ran: invalid workflow, bad arguments, unusable output folder
# casflow train: a trainer or reader raised an unexpected error (the run's 1, for training)
EXIT_TRAINING_FAILED = 1
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

VALIDATE_EXIT_STATUS = """\
exit status:
  0    the workflow is valid (nothing was read or written)
  2    it is not: every problem is printed, each with its file, line and what to do
"""

TRAIN_EXIT_STATUS = """\
exit status:
  0    the model was trained (with --fold K: that fold)
  1    training failed: a trainer or reader raised an unexpected error; the message
       names the step and where the traceback is (training-report.json, or
       training-error.log where the run wrote no report); finished folds and
       training stages are kept: the same command resumes
  2    stopped before training (invalid workflow or arguments, output folder
       unusable or holding another training workflow's model: --overwrite replaces
       it), or on gold data or settings a tool refused (the message says what to do)
  130  stopped by SIGINT (Ctrl-C)
  143  stopped by SIGTERM (Slurm, systemd, docker stop)
       (after 130 or 143 the part trained is kept; the same command resumes)
"""

SIGNIFICANCE_EXIT_STATUS = """\
exit status:
  0    the test ran: the p-value is printed and written beside the evaluation
  2    it did not: bad arguments, a run that was interrupted or wrote no evaluation,
       an unknown evaluator, metric or system (the message says what to do)
"""

REPORT_EXIT_STATUS = """\
exit status:
  0    evaluation.html was written again
  2    it was not: a run that was interrupted or wrote no evaluation, or a folder
       that cannot be read or written (the message says what to do)
"""
