"""A kernel file as users' repositories write them: it imports packages this machine does not
have (a framework, its NKI wrapper) and uses them where the file is imported (a wrapper call, a
decorator, a model class, a module constant, a guard); its kernels use NKI alone, except the
ones that use a missing package where they run."""

from __future__ import annotations

from dataclasses import dataclass

import nki
import nki.language as nl
import torch  # not installed here (nor needed: neuronsim runs the NKI calls)
import torch_xla.core.xla_model as xm  # a Neuron harness package, not installed either
from framework_lite.nki.hop import wrap_nki  # a wrapper package, not installed either

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
XLA_DEVICE = xm.xla_device()


@torch.jit.interface  # a decorator of a missing package on a class
@dataclass
class Counters:  # (a dataclass under string annotations: its module is looked up by name)
    calls: int = 0


@torch._dynamo.assume_constant_result  # a private name of the missing package
def count_call(counters: Counters) -> None:
    counters.calls += 1


@torch.no_grad()
@nki.jit
def add_one(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nl.add(t, 1.0))
    return out


add_one_wrapped = wrap_nki(add_one)


class Model(torch.nn.Module):
    dtype = torch.float32

    def forward(self, x):
        return add_one_wrapped(x)


@nki.jit
def uses_torch(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    scale = torch.ones(1)
    nl.store(out, value=nl.multiply(t, scale))
    return out


def reference(x):
    return {"return0": x + 1.0}


def torch_reference(x):
    return {"return0": torch.tensor(x).numpy() + 1.0}


_BLOCKS = {}


def register(key):
    """A decorator factory the file calls while it is imported (nki-llama's model glue): what
    it reads of the missing package then is import, inert as the module body's is."""
    base = torch.nn.Module

    def inner(cls):
        _BLOCKS[key] = (cls, base)
        return cls
    return inner


@register("block")
class Block(torch.nn.Module):
    pass
