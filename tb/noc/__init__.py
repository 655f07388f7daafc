"""NoC unit environment (rtl/noc.sv): tb/noc/env.py, tests in tb/noc/tests.py."""
