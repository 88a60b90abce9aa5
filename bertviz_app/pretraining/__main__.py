"""`python -m bertviz_app.pretraining` (and `torchrun ... -m bertviz_app.pretraining`) trains; `... evaluate` evaluates."""

from .training import main

main()
