"""Fault-injection tests: the trigger (and later other components) under crashes, throttling,
slow or failing services, on moto and the local doubles. The toolkit is `tests/faults/toolkit.py`."""
