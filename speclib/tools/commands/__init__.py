"""The ``speclib`` command's subcommands, one module each (gamma, sweep,
presets, schedule, profile, fit, acceptance, frontier). Each module has
``add_parser(sub)``, which adds its options and help, and ``run(args, out)``,
which prices and prints. What they share on the way in (bad input, the
option groups, option values parsed, the one Deployment the options
describe) is :mod:`.options`; on the way out (tables, notes on standard
error, files written whole) :mod:`.output`. The parser and the entry point
are :mod:`speclib.tools.cli`."""
