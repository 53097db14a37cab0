"""The rest of ``jax.nn``: squareplus, sparse_sigmoid, log1mexp, logmeanexp,
dot_product_attention (masks, bias, causal, sliding windows, sequence lengths, grouped
query heads, residuals), scaled_matmul / scaled_dot_general (block-scaled matmuls computed
by dequantizing) and get_scaled_dot_general_config."""
from __future__ import annotations

import dataclasses

import numpy as np

from xform._src.interpreters import dtypes
from xform import numpy as xnp
from xform.numpy import _util as U
from xform import lax
from xform._custom_derivatives import custom_jvp
from xform.scipy.special import logsumexp

__all__ = ["squareplus", "sparse_sigmoid", "log1mexp", "logmeanexp", "dot_product_attention",
           "scaled_matmul", "scaled_dot_general", "get_scaled_dot_general_config"]


def squareplus(x, b=4):
    """(x + sqrt(x**2 + b)) / 2."""
    x, b = U.ensure_arraylike("squareplus", x, b)
    x, b = U.to_array(x), U.to_array(b)
    return (x + xnp.sqrt(xnp.square(x) + b)) / 2


def sparse_sigmoid(x):
    """0.5 * clip(x + 1, 0, 2)."""
    x = U.ensure_arraylike("sparse_sigmoid", x)
    return 0.5 * xnp.clip(U.to_array(x) + 1.0, 0.0, 2.0)


_LOG1MEXP = []


def _log1mexp_fn(x):
    c = xnp.log(2.0)
    return xnp.where(x < c, xnp.log(-xnp.expm1(-x)), xnp.log1p(-xnp.exp(-x)))


def log1mexp(x):
    """log(1 - exp(-x)), accurate for small and large x (derivative 1 / expm1(x))."""
    x = U.ensure_arraylike("log1mexp", x)
    if not _LOG1MEXP:
        f = custom_jvp(_log1mexp_fn)
        f.defjvps(lambda g, ans, x: g / xnp.expm1(x))
        _LOG1MEXP.append(f)
    return _LOG1MEXP[0](U.to_array(x))


def logmeanexp(x, axis=None, where=None, keepdims=False):
    """log(mean(exp(x))) = logsumexp - log(count)."""
    x = U.ensure_arraylike("logmeanexp", x)
    x = U.to_array(x)
    lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
    ones = xnp.ones(x.shape, lse.dtype)
    if where is not None:
        ones = xnp.where(where, ones, xnp.zeros_like(ones))
    count = xnp.sum(ones, axis=axis, keepdims=keepdims, dtype=lse.dtype)
    return lse - xnp.log(count)


# ------------------------------------------------------------------ attention


def _large_negative(dtype):
    m = min(float(np.finfo(dtype).max), float(np.finfo(np.float32).max))
    return xnp.asarray(-0.7 * m, dtype=dtype)


def _masks(logits, mask, is_causal, q_seqlen, kv_seqlen, window):
    if mask is None and not is_causal and q_seqlen is None and kv_seqlen is None \
            and window is None:
        return logits
    combined = xnp.ones(logits.shape, dtype=bool)
    if mask is not None:
        combined = combined & mask
    T, S = logits.shape[2], logits.shape[3]
    if is_causal:
        combined = combined & xnp.tril(xnp.ones((T, S), dtype=bool))[None, None]
    if window is not None:
        q = xnp.arange(T)[:, None]
        k = xnp.arange(S)[None, :]
        left, right = window
        combined = combined & ((q <= k + left) & (q >= k - right))[None, None]
    if q_seqlen is not None or kv_seqlen is not None:
        m = xnp.ones((1, T, S), dtype=bool)
        if q_seqlen is not None:
            m = m & (xnp.arange(T)[None, :, None] < q_seqlen[:, None, None])
        if kv_seqlen is not None:
            m = m & (xnp.arange(S)[None, None, :] < kv_seqlen[:, None, None])
        combined = combined & m[:, None, :, :]
    return xnp.where(combined, logits, _large_negative(logits.dtype))


def _attention_core(query, key, value, bias, mask, is_causal, scale, q_seqlen, kv_seqlen,
                    window, return_residual):
    """query (B, T, N, H) -> per-group attention; bias/mask broadcast to (B, N, T, S)."""
    from xform.nn import softmax  # deferred: import cycle
    logits_dtype = xnp.promote_types(query.dtype, np.float32)
    logits = xnp.einsum("BTNH,BSNH->BNTS", query, key, preferred_element_type=logits_dtype)
    logits = logits * xnp.array(scale, dtype=logits.dtype)
    if bias is not None:
        logits = (logits + bias).astype(logits.dtype)
    padded = _masks(logits, mask, is_causal, q_seqlen, kv_seqlen, window).astype(np.float32)
    probs = softmax(padded, axis=-1).astype(key.dtype)
    encoded = xnp.einsum("BNTS,BSNH->BTNH", probs, value)
    if q_seqlen is not None:
        qmask = xnp.arange(encoded.shape[1])[None, :] < q_seqlen[:, None]
        encoded = encoded * qmask[:, :, None, None].astype(encoded.dtype)
    if return_residual:
        lse = logsumexp(padded, axis=-1).astype(key.dtype)
        return encoded, lax.stop_gradient(xnp.transpose(lse, (0, 2, 1)))
    return encoded


def _attention_xla(query, key, value, bias, mask, is_causal, scale, q_seqlen, kv_seqlen,
                   window, return_residual):
    B, T, N, H = query.shape
    _, S, K, _ = key.shape
    G = N // K
    # grouped-query attention: head n = k * G + g attends with key/value head k
    qg = xnp.reshape(query, (B, T, K, G, H))

    def grouped(t):
        if t is None:
            return None
        tB, tN, tT, tS = t.shape
        if tN == 1:
            return xnp.broadcast_to(t[:, :, None, :, :], (tB, tN, G, tT, tS))
        return xnp.reshape(t, (tB, K, G, tT, tS))
    bias, mask = grouped(bias), grouped(mask)
    outs, res = [], []
    for g in range(G):
        o = _attention_core(qg[:, :, :, g], key, value,
                            None if bias is None else bias[:, :, g],
                            None if mask is None else mask[:, :, g], is_causal, scale,
                            q_seqlen, kv_seqlen, window, return_residual)
        if return_residual:
            o, r = o
            res.append(r)
        outs.append(o)
    encoded = xnp.reshape(xnp.stack(outs, axis=3), (B, T, N, H))
    if return_residual:
        return encoded, xnp.reshape(xnp.stack(res, axis=3), (B, T, N))
    return encoded


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal=False, query_seq_lengths=None, key_value_seq_lengths=None,
                          local_window_size=None, implementation=None, return_residual=False):
    """Scaled dot-product attention softmax(q k^T * scale + bias, masked) v with
    ``(B, T, N, H)`` query and ``(B, S, K, H)`` key/value (N a multiple of K: grouped
    query attention); rank-3 inputs get a leading batch axis."""
    query, key, value = U.ensure_arraylike("dot_product_attention", query, key, value)
    out_shape = xnp.asarray(query).shape

    def four_d(t):
        t = xnp.asarray(t)
        return xnp.expand_dims(t, tuple(range(4 - t.ndim))) if t.ndim < 4 else t
    q, k, v = four_d(query), four_d(key), four_d(value)
    bias = four_d(bias) if bias is not None else None
    mask = four_d(mask) if mask is not None else None
    if query_seq_lengths is not None:
        query_seq_lengths = xnp.asarray(query_seq_lengths)
    if key_value_seq_lengths is not None:
        key_value_seq_lengths = xnp.asarray(key_value_seq_lengths)
    if isinstance(local_window_size, int):
        local_window_size = (local_window_size, local_window_size)

    def check(t, shape, dtype, name):
        if t is None:
            return
        if t.ndim != len(shape):
            raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}")
        if dtype is not None and t.dtype != dtype:
            raise ValueError(f"{name} dtype should be {dtype}, but got {t.dtype}")
        for i in range(t.ndim):
            if shape[i] != -1 and t.shape[i] != shape[i]:
                raise ValueError(f"{name} shape should be {shape}: but got {t.shape}")
    B, S, K, H = k.shape
    check(v, [B, S, K, H], k.dtype, "value")
    check(q, [B, -1, -1, H], k.dtype, "query")
    check(mask, [-1] * 4, np.dtype(bool), "mask")
    check(bias, [-1] * 4, None, "bias")
    check(query_seq_lengths, [B], np.dtype("int32"), "query_seq_lengths")
    check(key_value_seq_lengths, [B], np.dtype("int32"), "key_value_seq_lengths")
    if q.shape[-2] % K != 0:
        raise ValueError("The number of query heads must be a multiple of key/value heads, "
                         f"but got {q.shape[-2]} vs {K}")
    scale_val = 1.0 / np.sqrt(H) if scale is None else scale
    if implementation == "cudnn":
        raise ValueError("implementation='cudnn' needs an NVIDIA GPU with cuDNN, which xform "
                         "does not target; use implementation=None or 'xla'.")
    if implementation not in (None, "xla"):
        raise ValueError(f"Unsupported implementation option: {implementation}")
    out = _attention_xla(q, k, v, bias, mask, is_causal, scale_val, query_seq_lengths,
                         key_value_seq_lengths, local_window_size, return_residual)
    if return_residual:
        out, residual = out
        return xnp.reshape(out, out_shape), xnp.reshape(residual, out_shape[:-1])
    return xnp.reshape(out, out_shape)


# ------------------------------------------------------------------ block-scaled matmuls


@dataclasses.dataclass
class BlockScaleConfig:
    """How one operand of ``scaled_dot_general`` is block-quantized."""
    mode: str
    block_size: int
    data_type: object
    scale_type: object
    global_scale: object
    infer_only: bool


def get_scaled_dot_general_config(mode, global_scale=None):
    """The block-scaling configuration of ``mode`` ('nvfp4' or 'mxfp8')."""
    import ml_dtypes   # lazily: ~0.5 s to import
    if mode == "nvfp4":
        one = xnp.ones((1,), dtype=np.float32)
        return BlockScaleConfig("nvfp4", 16, np.dtype(ml_dtypes.float4_e2m1fn),
                                np.dtype(ml_dtypes.float8_e4m3fn),
                                one if global_scale is None else global_scale, False)
    if mode == "mxfp8":
        return BlockScaleConfig("mxfp8", 32, np.dtype(ml_dtypes.float8_e4m3fn),
                                np.dtype(ml_dtypes.float8_e8m0fnu), None, False)
    raise ValueError(f"Unsupported mode: {mode}")


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
    """Block-scaled batched matmul: lhs (B, M, K), rhs (B, N, K), scales (B, M, K/bs) and
    (B, N, K/bs); out[b, m, n] = sum_k lhs*lhs_scale * rhs*rhs_scale (dequantized, then
    contracted in float32)."""
    a, b, sa, sb = (xnp.asarray(t) for t in (lhs, rhs, lhs_scales, rhs_scales))
    if not all(t.ndim == 3 for t in (a, b, sa, sb)):
        raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays")
    Ba, Ma, Ka = a.shape
    Bb, Nb, Kb = b.shape
    if Ka != Kb or Ba != Bb:
        raise ValueError("scaled_matmul requires inputs a and b to have matching batch (B) and "
                         f"contract (K) dimensions, but got shapes {a.shape} and {b.shape}")
    Bas, Mas, Kas = sa.shape
    Bbs, Nbs, Kbs = sb.shape
    if Kas != Kbs or Bas != Bbs:
        raise ValueError("scaled_matmul requires scales to have matching batch (B) and "
                         f"contract (K) dimensions, but got shapes {sa.shape} and {sb.shape}")
    if Mas != Ma or Nbs != Nb:
        raise ValueError("scaled_matmul requires scales to match non-contract dimensions of "
                         f"inputs, but got shapes a: {a.shape}, b: {b.shape}, a_scales: "
                         f"{sa.shape}, b_scales: {sb.shape}")
    if Ka % Kas != 0:
        raise ValueError(f"scaled_matmul: K={Ka} is not a multiple of the scales' K={Kas}")
    bs = Ka // Kas
    deq = lambda x, s: x.astype(np.float32) * xnp.repeat(s.astype(np.float32), bs,  # noqa
                                                          axis=-1)
    out = xnp.einsum("bmk,bnk->bmn", deq(a, sa), deq(b, sb))
    return out.astype(preferred_element_type)


def _quantize(x, config, axis):
    """Block-quantize ``x`` along ``axis`` as JAX's block-scaled dot does (mxfp8: power-of-two
    scales rounded up; nvfp4: float8 scales after dividing by the global scale) and return
    the dequantized float32 value (the global scale multiplied back)."""
    import ml_dtypes  # deferred: keeps `import xform` light
    x = xnp.moveaxis(x.astype(np.float32), axis, -1)
    K = x.shape[-1]
    bs = config.block_size
    if K < bs or K % bs:
        raise ValueError(f"scaled_dot_general: the contracting size {K} must be a multiple of "
                         f"the block size {bs}")
    blocks = x.reshape(x.shape[:-1] + (K // bs, bs))
    dmax = float(ml_dtypes.finfo(config.data_type).max)
    gs = None
    if config.mode == "mxfp8":
        s = xnp.max(xnp.abs(blocks), axis=-1, keepdims=True) / dmax
        scale = xnp.where(s > 0, xnp.exp2(xnp.ceil(xnp.log2(s))), 2.0 ** -127)
    elif config.mode == "nvfp4":
        gs = xnp.asarray(config.global_scale, np.float32).reshape(())
        blocks = blocks / gs
        smax = float(ml_dtypes.finfo(config.scale_type).max)
        s = xnp.clip(xnp.max(xnp.abs(blocks), axis=-1, keepdims=True) / dmax, 0, smax)
        scale = s.astype(config.scale_type).astype(np.float32)
    else:
        raise ValueError(f"Unrecognized mode: {config.mode}.")
    q = xnp.clip(blocks / scale, -dmax, dmax).astype(config.data_type)
    deq = q.astype(np.float32) * scale
    if gs is not None:
        deq = deq * gs
    return xnp.moveaxis(deq.reshape(x.shape), -1, axis)


def scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32,
                       configs=None, implementation=None):
    """``lax.dot_general`` whose operands are first block-quantized per ``configs`` (one
    BlockScaleConfig per operand; None: a plain dot_general)."""
    if configs is None:
        return lax.dot_general(lhs, rhs, dimension_numbers,
                               preferred_element_type=preferred_element_type)
    if len(configs) < 2:
        raise ValueError("scaled_dot_general: configs must hold one config per operand")
    (lc, rc), _ = dimension_numbers
    if len(lc) != 1 or len(rc) != 1:
        raise ValueError("scaled_dot_general with configs supports one contracting dimension")
    lhs_q = _quantize(xnp.asarray(lhs), configs[0], lc[0])
    rhs_q = _quantize(xnp.asarray(rhs), configs[1], rc[0])
    out = lax.dot_general(lhs_q, rhs_q, dimension_numbers, preferred_element_type=np.float32)
    return out.astype(preferred_element_type)
