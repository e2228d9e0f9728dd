"""A project's saved goals, funnels, segments and annotations (issue 41).

One module per resource (:mod:`.goals`, :mod:`.funnels`, :mod:`.segments`,
:mod:`.annotations`), each owning its table of the metadata store and the validation of what
is written to it; :mod:`.common` holds what they share (ids, names, bounds, unknown fields).
Blocking functions over the metadata store: call them in a worker thread. The HTTP handlers
are :mod:`svc.http.saved`; the reads that use them are GET /metrics/goals (the saved goals),
GET /metrics/funnel (``funnel=<id>``) and the email reports (svc.mail.report).
"""
