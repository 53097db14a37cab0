import xform, xform.numpy as xnp
from xform.experimental.hijax import Box
b = Box(xnp.array(1.0))
print(b.get())
b.set(b.get() + 1); print(b.get())
@xform.jit
def f(b, x):
    b.set(b.get() * x)
    return b.get() + 1
print(f(b, 3.0), b.get())
print(f(b, 3.0), b.get())
# closure
c = Box(xnp.array(2.0))
@xform.jit
def g(x):
    c.set(c.get() + x)
    return x * 2
print(g(1.0), c.get()); print(g(1.0), c.get())
# type change via arg
d = Box(xnp.array(1.0))
@xform.jit
def h(d):
    d.set((d.get(), xnp.ones(3)))
h(d); print(d.get())
# scan closure
e = Box(xnp.array(0.0))
def body(c, x):
    e.set(e.get() + x)
    return c, None
xform.lax.scan(body, 0.0, xnp.arange(4.0)); print(e.get())
# grad with closure
k = Box(xnp.array(0.0))
def loss(x):
    k.set(xform.lax.stop_gradient(x*3))
    return x**2 + k.get()
print(xform.grad(loss)(4.0), k.get())
