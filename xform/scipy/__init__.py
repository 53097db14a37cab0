"""``xform.scipy``: the parts of ``jax.scipy`` xform provides (``special``)."""
from xform.scipy import special  # noqa: F401
from xform.scipy import optimize  # noqa: F401
from xform.scipy import linalg  # noqa: F401,E402
from xform.scipy import signal  # noqa: F401

__all__ = ["special"]
__all__ += ["signal"]
__all__ += ["optimize"]
from xform.scipy import stats  # noqa: F401,E402
__all__ += ["stats"]
from xform.scipy import cluster, integrate, interpolate, ndimage  # noqa: F401,E402
__all__ += ["cluster", "integrate", "interpolate", "ndimage"]
from xform.scipy import fft  # noqa: F401,E402
__all__ += ["fft"]
from xform.scipy import sparse  # noqa: F401,E402
__all__ += ["sparse"]
from xform.scipy import spatial  # noqa: F401,E402
__all__ += ["spatial"]
