#!/usr/bin/env python3
"""What IREE and XLA accept: one tiny StableHLO module per construct in question, compiled by
IREE (llvm-cpu) and by XLA's CPU compiler (jaxlib), with the first line of each rejection.
The table in docs/portability.md ("What each consumer accepts") is this script's output:

    .venv/bin/python bench/portability_probes.py

Each probe isolates one construct that `mlxcel emit` writes or deliberately avoids, so a change
of behaviour in a new IREE or jaxlib release shows here before it shows in the suite.
"""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import jax
from jax._src import xla_bridge
from jax._src.lib import xla_client

ADD = """
module {
  func.func @%(name)s(%%a: tensor<4xf32>) -> tensor<4xf32> {
    %%0 = stablehlo.add %%a, %%a : tensor<4xf32>
    return %%0 : tensor<4xf32>
  }
}
"""

PROBES = {
    "entry named @decode (not @main)": ADD % {"name": "decode"},
    "entry named @main": ADD % {"name": "main"},
    "stablehlo.composite with a decomposition": """
module {
  func.func private @twice(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.add %a, %a : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.composite "mx.twice" %a {decomposition = @twice, version = 1 : i32} : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
""",
    "dot_general with an f32_f32_f32 algorithm": """
module {
  func.func @main(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>) -> tensor<2x3xf32> {
    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0], algorithm = <lhs_precision_type = f32, rhs_precision_type = f32, accumulation_type = f32, lhs_component_count = 1, rhs_component_count = 1, num_primitive_operations = 1, allow_imprecise_accumulation = false> : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
}
""",
    "dot_general with a bf16_bf16_f32 algorithm (f32 operands)": """
module {
  func.func @main(%a: tensor<2x4xf32>, %b: tensor<4x3xf32>) -> tensor<2x3xf32> {
    %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0], algorithm = <lhs_precision_type = bf16, rhs_precision_type = bf16, accumulation_type = f32, lhs_component_count = 1, rhs_component_count = 1, num_primitive_operations = 1, allow_imprecise_accumulation = false> : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    return %0 : tensor<2x3xf32>
  }
}
""",
    "custom_call to an unknown target": """
module {
  func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
    %0 = stablehlo.custom_call @mx_fused_rms_norm(%a) : (tensor<4xf32>) -> tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
""",
    "i4 argument (packed 4-bit weights as such)": """
module {
  func.func @main(%a: tensor<8xi4>) -> tensor<8xi32> {
    %0 = stablehlo.convert %a : (tensor<8xi4>) -> tensor<8xi32>
    return %0 : tensor<8xi32>
  }
}
""",
    "ui32 argument unpacked in the graph (what emit writes)": """
module {
  func.func @main(%a: tensor<1xui32>) -> tensor<8xui32> {
    %0 = stablehlo.broadcast_in_dim %a, dims = [0] : (tensor<1xui32>) -> tensor<8xui32>
    %1 = stablehlo.iota dim = 0 : tensor<8xui32>
    %c4 = stablehlo.constant dense<4> : tensor<8xui32>
    %2 = stablehlo.multiply %1, %c4 : tensor<8xui32>
    %3 = stablehlo.shift_right_logical %0, %2 : tensor<8xui32>
    %c15 = stablehlo.constant dense<15> : tensor<8xui32>
    %4 = stablehlo.and %3, %c15 : tensor<8xui32>
    return %4 : tensor<8xui32>
  }
}
""",
    "tf.aliasing_output on a cache argument": """
module {
  func.func @main(%c: tensor<1x4x64x8xf32> {tf.aliasing_output = 1 : i32}, %v: tensor<1x4x1x8xf32>, %p: tensor<i32>) -> (tensor<f32>, tensor<1x4x64x8xf32>) {
    %z = stablehlo.constant dense<0> : tensor<i32>
    %0 = stablehlo.dynamic_update_slice %c, %v, %z, %z, %p, %z : (tensor<1x4x64x8xf32>, tensor<1x4x1x8xf32>, tensor<i32>, tensor<i32>, tensor<i32>, tensor<i32>) -> tensor<1x4x64x8xf32>
    %cst = stablehlo.constant dense<0.0> : tensor<f32>
    %1 = stablehlo.reduce(%0 init: %cst) applies stablehlo.add across dimensions = [0, 1, 2, 3] : (tensor<1x4x64x8xf32>, tensor<f32>) -> tensor<f32>
    return %1, %0 : tensor<f32>, tensor<1x4x64x8xf32>
  }
}
""",
}

IREE_FLAGS = ["--iree-input-type=stablehlo", "--iree-hal-target-device=local",
              "--iree-hal-local-target-device-backends=llvm-cpu",
              "--iree-llvmcpu-target-cpu=host"]


# 1 + 2^-10 is exact in f32 and rounds to 1 in bf16: the dot of a row with ones says whether
# the bf16 algorithm was applied (4.0) or the attribute ignored (4.0039...).
DOT_INPUTS = [np.full((2, 4), 1 + 2.0 ** -10, np.float32), np.ones((4, 3), np.float32)]


def algorithm_effect(result):
    v = float(np.asarray(result).reshape(-1)[0])
    return f"result {v:.6g} ({'operands rounded to bf16' if v == 4.0 else 'computed in f32'})"


def iree_run(vmfb, inputs):
    import iree.runtime as ireert
    config = ireert.Config("local-task")
    ctx = ireert.SystemContext(config=config)
    ctx.add_vm_module(ireert.VmModule.mmap(config.vm_instance, str(vmfb)))
    r = ctx.modules.module["main"](*inputs)
    return [np.array(r.to_host(), copy=True)] if not isinstance(r, (list, tuple)) else \
        [np.array(x.to_host(), copy=True) for x in r]


def first_error(text):
    for line in text.splitlines():
        if "error" in line:
            return re.sub(r"^.*?error: ", "", line).strip()[:160]
    return text.strip().splitlines()[-1][:160] if text.strip() else "?"


def iree(text, tmp):
    src, out = Path(tmp) / "p.mlir", Path(tmp) / "p.vmfb"
    src.write_text(text)
    compiler = Path(sys.executable).parent / "iree-compile"
    p = subprocess.run([str(compiler), *IREE_FLAGS, str(src), "-o", str(out)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return "rejected: " + first_error(p.stderr)
    note = "compiles"
    if "tf.aliasing_output" in text:
        abi = subprocess.run([str(compiler), *IREE_FLAGS, "--compile-to=abi", str(src)],
                             capture_output=True, text=True).stdout
        note += ("; the argument becomes iree.abi.output (result written into its buffer)"
                 if "iree.abi.output" in abi else "; the aliasing is dropped")
    if "algorithm" in text:
        note += "; " + algorithm_effect(iree_run(out, DOT_INPUTS)[0])
    if "xi4>" in text:
        run = Path(sys.executable).parent / "iree-run-module"
        r = subprocess.run([str(run), f"--module={out}", "--device=local-task",
                            "--function=main", "--input=8xi4=1,2,3,4,5,6,7,-8"],
                           capture_output=True, text=True)
        note += ("; iree-run-module runs it" if r.returncode == 0 else
                 "; iree-run-module cannot pass it: " + first_error(r.stderr + r.stdout))
    return note


def xla(text):
    client = xla_bridge.get_backend("cpu")
    dev = client.devices()[0]
    try:
        exe = client.compile_and_load(text, xla_client.DeviceList((dev,)),
                                      xla_client.CompileOptions())
    except Exception as e:  # the compiler's own message is the finding
        return "rejected: " + str(e).strip().splitlines()[0][:160]
    note = "compiles"
    if "algorithm" in text:
        out = exe.execute([jax.device_put(x, dev) for x in DOT_INPUTS])
        note += "; " + algorithm_effect(np.asarray(out[0]))
    if "tf.aliasing_output" in text:
        c = jax.device_put(np.zeros((1, 4, 64, 8), np.float32), dev)
        v = jax.device_put(np.ones((1, 4, 1, 8), np.float32), dev)
        p = jax.device_put(np.array(3, np.int32), dev)
        before = c.unsafe_buffer_pointer()
        out = exe.execute([c, v, p])
        note += ("; the cache is donated and updated in place (same buffer)"
                 if c.is_deleted() and out[1].unsafe_buffer_pointer() == before else
                 "; the cache is copied")
    return note


def main():
    print("| construct | IREE 3.13 llvm-cpu | XLA CPU (jaxlib %s) |" % jax.__version__)
    print("| --- | --- | --- |")
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in PROBES.items():
            print(f"| {name} | {iree(text, tmp)} | {xla(text)} |", flush=True)


if __name__ == "__main__":
    main()
