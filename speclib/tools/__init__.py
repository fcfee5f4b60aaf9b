"""Tools on top of the model: the ``speclib`` command (:mod:`.cli`)."""
