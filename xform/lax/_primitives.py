"""The primitive objects xform's engine binds, under JAX's ``jax.lax`` names.

``xform.make_jaxpr(f)(x).eqns[0].primitive is xform.lax.add_p`` holds: these are the
engine's own objects (each defined once in ``primitives/<family>.py``), so code that
matches equations on JAX's primitive names works on xform's programs.  A JAX primitive
xform never binds (``copy_p``, ``mulhi_p``, ...) is not listed.
"""


from xform._src.primitives.collectives import (  # noqa: F401
    all_gather_p, axis_index_p, pmax_p, pmin_p, psum_p,
)
from xform._src.primitives.control_flow import (  # noqa: F401
    cond_p, scan_p, while_p,
)
from xform._src.primitives.convolution import (  # noqa: F401
    conv_general_dilated_p,
)
from xform._src.primitives.elementwise import (  # noqa: F401
    abs_p, acos_p, acosh_p, add_p, and_p, asin_p, asinh_p, atan2_p, atan_p, atanh_p,
    bitcast_convert_type_p, cbrt_p, ceil_p, clamp_p, complex_p, conj_p,
    convert_element_type_p, cos_p, cosh_p, digamma_p, div_p, eq_p, erf_inv_p, erf_p,
    erfc_p, exp2_p, exp_p, expm1_p, floor_p, ge_p, gt_p, imag_p, integer_pow_p,
    is_finite_p, le_p, lgamma_p, log1p_p, log_p, logistic_p, lt_p, max_p, min_p,
    mul_p, ne_p, neg_p, nextafter_p, not_p, or_p, population_count_p, pow_p, real_p,
    rem_p, round_p, rsqrt_p, select_n_p, shift_left_p, shift_right_arithmetic_p,
    shift_right_logical_p, sign_p, sin_p, sinh_p, sqrt_p, square_p, stop_gradient_p,
    sub_p, tan_p, tanh_p, xor_p,
)
from xform._src.primitives.fft import (  # noqa: F401
    fft_p,
)
from xform._src.primitives.indexing import (  # noqa: F401
    gather_p, scatter_add_p, scatter_max_p, scatter_min_p, scatter_mul_p, scatter_p,
)
from xform._src.primitives.dot_general import (  # noqa: F401
    dot_general_p,
)
from xform._src.primitives.linear_solve import (  # noqa: F401
    linear_solve_p,
)
from xform._src.primitives.misc import (  # noqa: F401
    clz_p, optimization_barrier_p, reduce_precision_p,
)
from xform._src.primitives.random import (  # noqa: F401
    rng_bit_generator_p, rng_uniform_p,
)
from xform._src.primitives.reductions import (  # noqa: F401
    argmax_p, argmin_p, cumlogsumexp_p, cummax_p, cummin_p, cumprod_p, cumsum_p,
    reduce_and_p, reduce_max_p, reduce_min_p, reduce_or_p, reduce_prod_p,
    reduce_sum_p, reduce_xor_p,
)
from xform._src.primitives.sorting import (  # noqa: F401
    sort_p, top_k_p,
)
from xform._src.primitives.special import (  # noqa: F401
    bessel_i0e_p, bessel_i1e_p, igamma_grad_a_p, igamma_p, igammac_p, polygamma_p,
    regularized_incomplete_beta_p, zeta_p,
)
from xform._src.primitives.spmd import (  # noqa: F401
    all_to_all_p, ppermute_p, sharding_constraint_p,
)
from xform._src.primitives.structural import (  # noqa: F401
    broadcast_in_dim_p, concatenate_p, dynamic_slice_p, dynamic_update_slice_p,
    iota_p, pad_p, reshape_p, rev_p, slice_p, squeeze_p, transpose_p,
)
from xform._src.primitives.windowed import (  # noqa: F401
    reduce_p, reduce_window_max_p, reduce_window_min_p, reduce_window_p,
    reduce_window_sum_p, select_and_gather_add_p, select_and_scatter_add_p,
)

__all__ = sorted(n for n in dir() if n.endswith("_p"))
