"""The shadow scheduler (``python -m app shadow``): beside a live scheduler, what a profile would
have decided for each pod that scheduler binds, recorded and never acted on
(:mod:`app.shadow.shadow`, :mod:`app.shadow.cycle`, :mod:`app.shadow.record`,
:mod:`app.shadow.report`, :mod:`app.shadow.readonly`)."""
