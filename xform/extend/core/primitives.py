"""``xform.extend.core.primitives``: JAX's ``jax.extend.core.primitives``, the primitive
objects xform's engine binds (``jit_p`` is the equation ``xform.jit`` stages, ``remat_p``
``xform.checkpoint``'s, ``add_jaxvals_p`` the tangent sum), and ``call_p``/``closed_call_p``,
which xform's own transformations never bind but which work when a library binds them.
Names JAX has and xform has no primitive for (``device_put_p``, ``random_bits_p``, ...) are
absent: ``from ... import`` them raises ImportError.
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
from xform._src.primitives.custom import (  # noqa: F401
    custom_jvp_call_p, custom_lin_p, custom_vjp_call_p,
)
from xform._src.primitives.elementwise import (  # noqa: F401
    abs_p, acos_p, acosh_p, add_any_p as add_jaxvals_p, add_p, and_p, asin_p,
    asinh_p, atan2_p, atan_p, atanh_p, bitcast_convert_type_p, cbrt_p, ceil_p,
    clamp_p, complex_p, conj_p, convert_element_type_p, cos_p, cosh_p, digamma_p,
    div_p, eq_p, erf_inv_p, erf_p, erfc_p, exp2_p, exp_p, expm1_p, floor_p, ge_p,
    gt_p, imag_p, integer_pow_p, is_finite_p, le_p, lgamma_p, log1p_p, log_p,
    logistic_p, lt_p, max_p, min_p, mul_p, ne_p, neg_p, nextafter_p, not_p, or_p,
    population_count_p, pow_p, real_p, rem_p, round_p, rsqrt_p, select_n_p,
    shift_left_p, shift_right_arithmetic_p, shift_right_logical_p, sign_p, sin_p,
    sinh_p, sqrt_p, square_p, stop_gradient_p, sub_p, tan_p, tanh_p, xor_p,
)
from xform._src.primitives.fft import (  # noqa: F401
    fft_p,
)
from xform._src.primitives.indexing import (  # noqa: F401
    gather_p, scatter_add_p, scatter_max_p, scatter_min_p, scatter_mul_p, scatter_p,
)
from xform._src.primitives.jit import (  # noqa: F401
    call_p, closed_call_p, jit_p,
)
from xform._src.primitives.dot_general import (  # noqa: F401
    dot_general_p,
)
from xform._src.primitives.linalg_decomp import (  # noqa: F401
    cholesky_p, eig_p, eigh_p, hessenberg_p, householder_product_p, lu_p, qr_p,
    schur_p, svd_p, triangular_solve_p, tridiagonal_p, tridiagonal_solve_p,
)
from xform._src.primitives.linear_solve import (  # noqa: F401
    linear_solve_p,
)
from xform._src.primitives.misc import (  # noqa: F401
    clz_p, reduce_precision_p,
)
from xform._src.primitives.random import (  # noqa: F401
    rng_bit_generator_p, rng_uniform_p, threefry2x32_p,
)
from xform._src.primitives.reductions import (  # noqa: F401
    argmax_p, argmin_p, cumlogsumexp_p, cummax_p, cummin_p, cumprod_p, cumsum_p,
    reduce_and_p, reduce_max_p, reduce_min_p, reduce_or_p, reduce_prod_p,
    reduce_sum_p, reduce_xor_p,
)
from xform._src.primitives.remat import (  # noqa: F401
    name_p, remat_p,
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
