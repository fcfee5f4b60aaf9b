"""Tools on top of the model: the ``speclib`` command (:mod:`.cli`, its
subcommands in :mod:`.commands`) and speculation schedules for serving
engines (:mod:`.schedule`, :mod:`.engines`)."""
