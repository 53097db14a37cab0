"""``xform.example_libraries.stax``: JAX's minimal neural-network library.

A layer is a pair ``(init_fun, apply_fun)``: ``init_fun(rng, input_shape) ->
(output_shape, params)`` and ``apply_fun(params, inputs, **kwargs) -> outputs``
(``rng=`` for stochastic layers).  Combinators ``serial``, ``parallel``, ``FanOut``,
``FanInSum``, ``FanInConcat`` and ``shape_dependent`` build networks from layers.
Initialisers follow ``jax.nn.initializers`` (``glorot_normal`` = variance scaling,
fan-average, truncated normal; ``normal(stddev=1e-2)``), so with the same PRNG keys
(``xform.random`` is bit-compatible with JAX's) parameters equal JAX's.
"""
from __future__ import annotations

import functools
import math

import numpy as np

from xform import lax, random
from xform import numpy as jnp
from xform.nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax,
                      softplus, standardize)

__all__ = ["Dense", "GeneralConv", "Conv", "Conv1DTranspose", "ConvTranspose",
           "GeneralConvTranspose", "BatchNorm", "elementwise", "Tanh", "Relu", "Exp",
           "LogSoftmax", "Softmax", "Softplus", "Sigmoid", "Elu", "LeakyRelu", "Selu", "Gelu",
           "MaxPool", "SumPool", "AvgPool", "Flatten", "Identity", "FanOut", "FanInSum",
           "FanInConcat", "Dropout", "serial", "parallel", "shape_dependent",
           "glorot_normal", "glorot", "normal", "randn", "ones", "zeros", "logsoftmax",
           "relu", "log_softmax", "softmax", "softplus", "sigmoid", "elu", "leaky_relu",
           "selu", "gelu", "standardize"]


# ----------------------------------------------------------------- initialisers

def _fans(shape, in_axis, out_axis):
    nd = len(shape)
    ia, oa = in_axis % nd, out_axis % nd
    receptive = math.prod(d for i, d in enumerate(shape) if i not in (ia, oa))
    return shape[ia] * receptive, shape[oa] * receptive


def glorot_normal(in_axis=-2, out_axis=-1, dtype=None):
    """Truncated-normal (within 2 std) initialiser with variance 2 / (fan_in + fan_out)."""
    def init(key, shape, dtype=dtype):
        dtype = jnp.float32 if dtype is None else dtype
        shape = tuple(int(d) for d in shape)
        fan_in, fan_out = _fans(shape, in_axis, out_axis)
        variance = jnp.array(1.0 / ((fan_in + fan_out) / 2), dtype=dtype)
        stddev = jnp.sqrt(variance) / jnp.array(.87962566103423978, dtype)
        return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
    return init


def normal(stddev=1e-2, dtype=None):
    """Normal initialiser with standard deviation ``stddev``."""
    def init(key, shape, dtype=dtype):
        dtype = jnp.float32 if dtype is None else dtype
        return random.normal(key, tuple(int(d) for d in shape), dtype) * jnp.array(stddev,
                                                                                   dtype)
    return init


def ones(key, shape, dtype=None):
    return jnp.ones(shape, jnp.float32 if dtype is None else dtype)


def zeros(key, shape, dtype=None):
    return jnp.zeros(shape, jnp.float32 if dtype is None else dtype)


glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


# ----------------------------------------------------------------- layers


def Dense(out_dim, W_init=glorot_normal(), b_init=normal()):
    """Fully connected layer: ``inputs @ W + b``."""
    def init_fun(rng, input_shape):
        k1, k2 = random.split(rng)
        W, b = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
        return tuple(input_shape[:-1]) + (out_dim,), (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return jnp.dot(inputs, W) + b
    return init_fun, apply_fun


def _kernel_shape(dimension_numbers, out_chan, filter_shape, input_shape):
    lhs_spec, rhs_spec, _ = dimension_numbers
    it = iter(filter_shape)
    return [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
            else next(it) for c in rhs_spec]


def _conv_layer(dimension_numbers, out_chan, filter_shape, strides, padding, W_init, b_init,
                shape_rule, apply_conv):
    """A stax convolution layer (init_fun, apply_fun); ``shape_rule`` gives its output
    shape and ``apply_conv(inputs, W, strides)`` its value."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    strides = strides or (1,) * len(filter_shape)
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def init_fun(rng, input_shape):
        kshape = _kernel_shape(dimension_numbers, out_chan, filter_shape, input_shape)
        out_shape = shape_rule(input_shape, kshape, strides, padding, dimension_numbers)
        k1, k2 = random.split(rng)
        W = W_init(k1, kshape)
        b = b_init(k2, [out_chan if c == "C" else 1 for c in out_spec])
        return out_shape, (W, b)

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return apply_conv(inputs, W, strides) + b
    return init_fun, apply_fun


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding="VALID",
                W_init=None, b_init=normal(1e-6)):
    """Convolution with ``dimension_numbers = (lhs_spec, rhs_spec, out_spec)`` strings."""
    one = (1,) * len(filter_shape)
    return _conv_layer(
        dimension_numbers, out_chan, filter_shape, strides, padding, W_init, b_init,
        lax.conv_general_shape_tuple,
        lambda x, W, s: lax.conv_general_dilated(x, W, s, padding, one, one,
                                                 dimension_numbers=dimension_numbers))


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,
                         padding="VALID", W_init=None, b_init=normal(1e-6)):
    """Transposed convolution (``lax.conv_transpose``)."""
    return _conv_layer(
        dimension_numbers, out_chan, filter_shape, strides, padding, W_init, b_init,
        lax.conv_transpose_shape_tuple,
        lambda x, W, s: lax.conv_transpose(x, W, s, padding,
                                           dimension_numbers=dimension_numbers))


Conv1DTranspose = functools.partial(GeneralConvTranspose, ("NHC", "HIO", "NHC"))
ConvTranspose = functools.partial(GeneralConvTranspose, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True, beta_init=zeros,
              gamma_init=ones):
    """Normalise over ``axis`` with the batch's statistics, then ``gamma * z + beta``."""
    axis = (axis,) if np.isscalar(axis) else tuple(axis)

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        ed = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
        z = standardize(x, axis, epsilon=epsilon)
        if center and scale:
            return gamma[ed] * z + beta[ed]
        if center:
            return z + beta[ed]
        if scale:
            return gamma[ed] * z
        return z
    return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
    """A parameterless layer applying ``fun(inputs, **fun_kwargs)``."""
    return (lambda rng, input_shape: (input_shape, ()),
            lambda params, inputs, **kwargs: fun(inputs, **fun_kwargs))


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _pool(reducer, init_val, rescale=False):
    def Pool(window_shape, strides=None, padding="VALID", spec=None):
        strides = tuple(strides or (1,) * len(window_shape))
        window_shape = tuple(window_shape)
        spatial_window, spatial_strides = window_shape, strides
        nsp = (0, len(window_shape) + 1) if spec is None else (spec.index("N"),
                                                               spec.index("C"))
        for i in sorted(nsp):
            window_shape = window_shape[:i] + (1,) + window_shape[i:]
            strides = strides[:i] + (1,) + strides[i:]

        def init_fun(rng, input_shape):
            pads = lax.padtype_to_pads(input_shape, window_shape, strides, padding)
            # as JAX's stax: a -1 (unknown batch) size comes out as 0
            return lax.reduce_window_shape_tuple(input_shape, window_shape, strides,
                                                 pads), ()

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_val, reducer, window_shape, strides, padding)
            if not rescale:
                return out
            # average: divide by the number of (unpadded) elements in each window
            spatial = tuple(d for i, d in enumerate(inputs.shape) if i not in nsp)
            counts = lax.reduce_window(jnp.ones(spatial, inputs.dtype), 0.0, lax.add,
                                       spatial_window, spatial_strides, padding)
            for i in sorted(nsp):
                counts = jnp.expand_dims(counts, i)
            return out / counts
        return init_fun, apply_fun
    return Pool


MaxPool = _pool(lax.max, -jnp.inf)
SumPool = _pool(lax.add, 0.0)
AvgPool = _pool(lax.add, 0.0, rescale=True)


def _flatten():
    return (lambda rng, input_shape: ((input_shape[0], math.prod(input_shape[1:])), ()),
            lambda params, inputs, **kwargs: jnp.reshape(inputs, (inputs.shape[0], -1)))


Flatten = _flatten()
Identity = (lambda rng, input_shape: (input_shape, ()),
            lambda params, inputs, **kwargs: inputs)


def FanOut(num):
    """Copy the input ``num`` times (a list)."""
    return (lambda rng, input_shape: ([input_shape] * num, ()),
            lambda params, inputs, **kwargs: [inputs] * num)


FanInSum = (lambda rng, input_shape: (input_shape[0], ()),
            lambda params, inputs, **kwargs: sum(inputs))


def FanInConcat(axis=-1):
    """Concatenate a list of inputs along ``axis``."""
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(s[ax] for s in input_shape)
        return tuple(input_shape[0][:ax]) + (size,) + tuple(input_shape[0][ax + 1:]), ()
    return init_fun, lambda params, inputs, **kwargs: jnp.concatenate(inputs, axis)


def Dropout(rate, mode="train"):
    """Dropout; as in JAX's stax, ``rate`` is the probability of *keeping* a unit (kept
    units are divided by it).  Needs ``rng=`` in ``apply_fun`` in train mode."""
    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng", None)
        if rng is None:
            raise ValueError("Dropout layer requires apply_fun to be called with a PRNG key "
                             "argument. That is, instead of `apply_fun(params, inputs)`, call "
                             "it like `apply_fun(params, inputs, rng)` where `rng` is a PRNG "
                             "key (e.g. from `xform.random.key`).")
        if mode == "train":
            keep = random.bernoulli(rng, rate, inputs.shape)
            return jnp.where(keep, inputs / rate, 0)
        return inputs
    return (lambda rng, input_shape: (input_shape, ())), apply_fun


def serial(*layers):
    """Compose layers in sequence."""
    n = len(layers)
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        params = []
        for f in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, p = f(layer_rng, input_shape)
            params.append(p)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, n) if rng is not None else (None,) * n
        for f, p, r in zip(apply_funs, params, rngs):
            inputs = f(p, inputs, rng=r, **kwargs)
        return inputs
    return init_fun, apply_fun


def parallel(*layers):
    """Apply layers to the corresponding elements of a list input."""
    n = len(layers)
    init_funs, apply_funs = zip(*layers) if layers else ((), ())

    def init_fun(rng, input_shape):
        rngs = random.split(rng, n)
        return zip(*[f(r, s) for f, r, s in zip(init_funs, rngs, input_shape)])

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, n) if rng is not None else (None,) * n
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs,
                                                                rngs)]
    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer built from the input shape by ``make_layer(shape) -> layer``."""
    return (lambda rng, input_shape: make_layer(input_shape)[0](rng, input_shape),
            lambda params, inputs, **kwargs: make_layer(inputs.shape)[1](params, inputs,
                                                                          **kwargs))
