import xform, xform.numpy as xnp
from xform.experimental.hijax import Box
c = Box(xnp.array(2.0))
@xform.jit
def g(x):
    c.set(c.get() + x)
    return x * 2
print(g(1.0), c.get()); print(g(1.0), c.get())
