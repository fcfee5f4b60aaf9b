"""What the book shows: tables of computed values (:mod:`.tables`,
:mod:`.summaries`), the figures (:mod:`.figures`) and their notebook widgets
(:mod:`.widgets`), the live HTML figures (:mod:`.web`) and the Sphinx
extension that puts them in the book (:mod:`.sphinx_ext`)."""
