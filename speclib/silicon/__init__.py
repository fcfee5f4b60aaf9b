"""Measured silicon: NVIDIA's per-operation kernel tables (imported from
AIConfigurator's ``aiconfigurator-core``, Apache-2.0) and a step priced from
them. :mod:`speclib.silicon.tables` reads the shipped tables;
:mod:`speclib.silicon.step` prices a plain step and a verify from them,
component by component, with the roofline where no table measures a part."""
