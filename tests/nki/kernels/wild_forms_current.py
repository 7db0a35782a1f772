"""The current API's forms of tests/nki/test_wild_forms.py: NkiTensor's shape views (NKI 0.6 /
0.7), and the mistakes public kernels make, each refused at its line."""

import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def views(x, w):
    """x: (128, 4, 6); w: (1, 24).  Each view moves its bytes by DMA into a tile of its shape."""
    a = nl.ndarray((128, 6, 4), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=a, src=x.permute((0, 2, 1)))
    b = nl.ndarray((8, 24), dtype=w.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=b, src=w.broadcast(0, 8))
    c = nl.ndarray((128, 24), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=c, src=x.flatten_dims(1, 2))
    d = nl.ndarray((128, 4, 2, 3), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=d, src=x.reshape_dim(2, (2, -1)))
    e = nl.ndarray((128, 6), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=e, src=x.select(1, 2))
    f = nl.ndarray((128, 2, 6), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=f, src=x.slice(1, 1, 4, 2))
    g = nl.ndarray((128, 1, 24), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g, src=c.expand_dim(1))
    outs = [nl.ndarray(t.shape, dtype=t.dtype, buffer=nl.shared_hbm) for t in (a, b, c, d, e, f)]
    for o, t in zip(outs, (a, b, c, d, e, f)):
        nisa.dma_copy(dst=o, src=t)
    h = nl.ndarray((128, 24), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=h, src=g.squeeze_dim(1))
    k = nl.ndarray((128, 6, 4), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=k, src=x.permute(dims=[0, 2, 1]))  # by keyword, as nki-library's July 2026 kernels call it
    return (*outs, h, k)


@nki.jit
def returns_inside_unrolled_loop(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for _i in nl.affine_range(3):
        nl.store(out, value=nl.load(a))
        return out


@nki.jit
def sqrt_of_a_number(a):
    return nl.sqrt(64.0)


@nki.jit
def loads_one_element(a):
    return nl.load(a[0, 1])


@nki.jit
def mask_as_index(a):
    t = nl.load(a)
    return nl.copy(t[nl.arange(64)[None, :] < 40])


@nki.jit
def squeezes_a_long_dimension(x):
    return x.squeeze_dim(1)


@nki.jit
def permutes_partitions(x):
    t = nl.ndarray((128, 4), dtype=x.dtype, buffer=nl.sbuf)
    return t.permute((1, 0))


@nki.jit
def loads_256_partitions(x, g):
    t = nl.load(x)
    gs = nl.load(g[0:256])
    return nl.multiply(t, gs)


def writes_its_argument(a, out):
    nl.store(out, value=nl.multiply(nl.load(a), 2.0))


@nki.jit(platform_target="trn2")
def on_trn2(x):
    """A tile of 200,000 bytes a partition: past trn1's SBUF partition, inside trn2's."""
    t = nl.ndarray((128, 50_000), dtype=nl.float32, buffer=nl.sbuf)
    nisa.dma_copy(dst=t[:, 0:64], src=x)
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t[:, 0:64])
    return out


@nki.jit
def version_branch(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    factor = 3.0 if nisa.get_nc_version() == nisa.nc_version.gen3 else 2.0
    nisa.dma_copy(dst=out, src=nl.multiply(t, factor))
    return out


@nki.jit
def mask_as_operand(a):
    t = nl.load(a)
    return nl.multiply(t, nl.arange(128)[:, None] < 100)


@nki.jit
def fp8_view_slice(w):
    """int8 bytes read as fp8 through a view, then sliced (the same bytes an element)."""
    t = nl.ndarray(w.shape, dtype=nl.int8, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=w)
    f8 = t.view(nl.float8_e4m3)
    r = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=r, src=f8[0:128, 0:64])
    out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=r)
    return out


@nki.jit
def rearranged(x):
    """x: (128, 24).  NkiTensor.rearrange, einops' named dimensions, by tuples and by text."""
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    a = nl.ndarray((128, 6, 4), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=a, src=t.rearrange(('b', ('h', 'w')), ('b', 'w', 'h'), {'h': 4}))
    b = nl.ndarray((128, 2, 12), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=b, src=t.rearrange("p (h w c)", "p h (w c)", h=2, w=3))
    outs = [nl.ndarray(v.shape, dtype=v.dtype, buffer=nl.shared_hbm) for v in (a, b)]
    for o, v in zip(outs, (a, b)):
        nisa.dma_copy(dst=o, src=v)
    return tuple(outs)


@nki.jit
def rearranges_partitions(x):
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    u = nl.ndarray((64, 128), dtype=x.dtype, buffer=nl.sbuf)
    nisa.tensor_copy(dst=u, src=t.rearrange(('p', 'f'), ('f', 'p')))
    return u


@nki.jit
def merges_apart(x):  # x (2, 128, 32): n and f are not adjacent once p leads (probe_q)
    t = nl.ndarray((128, 64), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.rearrange(('n', 'p', 'f'), ('p', ('n', 'f'))))
    return t


@nki.jit
def ap_offset_as_list(a):  # the access-pattern page's own typo: the offset given as a list, beside the pattern
    t = nl.load(a)
    return nl.copy(t.ap([[64, 128], [1, 32]], [1, 32]))
