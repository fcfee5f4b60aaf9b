"""Tools on top of the model: the ``speclib`` command (:mod:`.cli`) and
speculation schedules for serving engines (:mod:`.schedule`, :mod:`.engines`)."""
