"""The calibrated step: its form and constants fitted on measured decoding and speculative runs
(:mod:`.step_features`, :mod:`.step_fit`), held out a family, chip or source at a time beside null
baselines (:mod:`.held_out`, :mod:`.baselines`), its intervals (:mod:`.conformal`), its predictions and
report (:mod:`.step_predictions`, :mod:`.step_report`), a fit on one deployment's own runs
(:mod:`.own_fit`, :mod:`.few_shot`) and the frontiers it predicts (:mod:`.frontiers`)."""
