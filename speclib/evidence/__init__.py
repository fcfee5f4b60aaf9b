"""The model checked: every number the paper states recomputed
(:mod:`.claims`), the appendix derivations done by sympy step by step
(:mod:`.derivations`), and the roofline held against measured decoding
(:mod:`.validation`)."""
