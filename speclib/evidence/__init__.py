"""The model checked against what was measured and printed: every number the
paper states recomputed (:mod:`.claims`), the appendix derivations done by
sympy step by step (:mod:`.derivations`), the roofline held against measured
decoding (:mod:`.validation`), and the readers of the measured runs, engine
files and peers the calibrated step (:mod:`speclib.calibration`) is fitted on
and held against."""
