"""The read side's admission: which reads of ``GET /metrics*`` run now, and which wait their
turn (:mod:`svc.reads.scheduler`)."""
