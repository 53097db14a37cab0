import os

from hypothesis import HealthCheck, settings

# Local runs draw fresh examples every time (that is how new bugs are found); CI
# (CI=true) replays a fixed seed per test so a submission's result is reproducible.
settings.register_profile(
    "ci", max_examples=int(os.environ.get("XFORM_HYPOTHESIS_EXAMPLES", "25")), deadline=None,
    derandomize=bool(os.environ.get("CI")),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much])
settings.register_profile("thorough", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
