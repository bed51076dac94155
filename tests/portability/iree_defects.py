#!/usr/bin/env python3
"""Two valid StableHLO constructs that IREE 3.13's compiler rejects, each beside the form
`mlxcel emit` writes instead (docs/portability.md, "IREE 3.13 defects").

For each defect the test requires:
  - the defective form still rejected by IREE with its known message: when a new IREE compiles
    it, this test fails and says which workaround in the emitter may go;
  - the defective form compiled by XLA and computing the expected values (so it is IREE's
    defect, not invalid text);
  - the emitter's form compiled by both and computing the same values.
"""
import importlib.metadata
import subprocess
import sys
import tempfile
from pathlib import Path

import portability as port  # the consumers and IREE's flags
from portability import np

# A private function that converts its argument, called twice with one value made by a reshape:
# IREE's StableHLO import leaves an unresolved i32 -> f32 materialization. @prefill_media of the
# M-RoPE models (Qwen2-VL, Qwen2.5-VL, Qwen3-VL) passed each row of its positions argument,
# sliced and reshaped [1, B, T] -> [B, T], to the mx.rope decompositions of q and k.
RESHAPE_CALLS = """
module {
  func.func private @to_f32(%x: tensor<1x8xi32>) -> tensor<1x8xf32> {
    %0 = stablehlo.convert %x : (tensor<1x8xi32>) -> tensor<1x8xf32>
    return %0 : tensor<1x8xf32>
  }
  func.func @main(%p: tensor<3x1x8xi32>) -> (tensor<1x8xf32>, tensor<1x8xf32>) {
    %s = stablehlo.slice %p [1:2, 0:1, 0:8] : (tensor<3x1x8xi32>) -> tensor<1x1x8xi32>
    %0 = stablehlo.reshape %s : (tensor<1x1x8xi32>) -> tensor<1x8xi32>
    %1 = func.call @to_f32(%0) : (tensor<1x8xi32>) -> tensor<1x8xf32>
    %2 = func.call @to_f32(%0) : (tensor<1x8xi32>) -> tensor<1x8xf32>
    return %1, %2 : tensor<1x8xf32>, tensor<1x8xf32>
  }
}
"""
# What graph_core.c's mrope_positions writes: one reshape of the whole argument, rows sliced.
RESHAPE_CALLS_EMITTED = RESHAPE_CALLS.replace(
    """    %s = stablehlo.slice %p [1:2, 0:1, 0:8] : (tensor<3x1x8xi32>) -> tensor<1x1x8xi32>
    %0 = stablehlo.reshape %s : (tensor<1x1x8xi32>) -> tensor<1x8xi32>""",
    """    %r = stablehlo.reshape %p : (tensor<3x1x8xi32>) -> tensor<3x8xi32>
    %0 = stablehlo.slice %r [1:2, 0:8] : (tensor<3x8xi32>) -> tensor<1x8xi32>""")

# A vector-matrix product whose matrix is a convert of an i1: IREE's llvm-cpu configuration
# fails on the i1 operand it fuses into linalg.vecmat. Gemma 3's @prefill_media (the image block
# ids: a running count of run starts, mx_g_run_ids) multiplied [1, T] by such a triangle.
I1_VECMAT = """
module {
  func.func @main(%x: tensor<1x16xf32>) -> tensor<1x16xf32> {
    %0 = stablehlo.iota dim = 0 : tensor<16x16xi32>
    %1 = stablehlo.iota dim = 1 : tensor<16x16xi32>
    %2 = stablehlo.compare LE, %0, %1, SIGNED : (tensor<16x16xi32>, tensor<16x16xi32>) -> tensor<16x16xi1>
    %3 = stablehlo.convert %2 : (tensor<16x16xi1>) -> tensor<16x16xf32>
    %4 = stablehlo.dot_general %x, %3, contracting_dims = [1] x [0] : (tensor<1x16xf32>, tensor<16x16xf32>) -> tensor<1x16xf32>
    return %4 : tensor<1x16xf32>
  }
}
"""
# What mx_g_indicator writes: a select of two splats.
I1_VECMAT_EMITTED = I1_VECMAT.replace(
    "    %3 = stablehlo.convert %2 : (tensor<16x16xi1>) -> tensor<16x16xf32>",
    """    %one = stablehlo.constant dense<1.0> : tensor<16x16xf32>
    %zero = stablehlo.constant dense<0.0> : tensor<16x16xf32>
    %3 = stablehlo.select %2, %one, %zero : tensor<16x16xi1>, tensor<16x16xf32>""")

POSITIONS = np.arange(24, dtype=np.int32).reshape(3, 1, 8) * 7 - 40
ROW = np.linspace(-2, 3, 16, dtype=np.float32).reshape(1, 16)

DEFECTS = [
    {"name": "a reshape's result passed to two calls that convert it",
     "defect": RESHAPE_CALLS, "emitted": RESHAPE_CALLS_EMITTED,
     "message": "failed to legalize unresolved source materialization",
     "workaround": "graph_core.c mrope_positions (reshape once, slice rows)",
     "inputs": [POSITIONS],
     "expect": [POSITIONS[1].astype(np.float32)] * 2},
    {"name": "a vector-matrix dot_general of a converted i1",
     "defect": I1_VECMAT, "emitted": I1_VECMAT_EMITTED,
     "message": "'linalg.vecmat' op expected type of bb argument #1 ('i1')",
     "workaround": "mx_g_indicator (graph_ops.c): a select instead of the convert",
     "inputs": [ROW],
     "expect": [np.cumsum(ROW, axis=1, dtype=np.float32)]},
]


def iree_rejection(text, tmp):
    """IREE's compiler's whole stderr for the module, or None when it compiles."""
    src = Path(tmp) / "defect.mlir"
    src.write_text(text)
    compiler = Path(sys.executable).parent / "iree-compile"
    p = subprocess.run([str(compiler), *port.IREE_FLAGS, str(src), "-o", str(src) + ".vmfb"],
                       capture_output=True, text=True)
    return None if p.returncode == 0 else p.stderr


def values(consumer, text, tmp, inputs):
    """Every result of the module's @main on a consumer, as numpy arrays."""
    src = Path(tmp) / f"{consumer.name}.mlir"
    src.write_text(text)
    first, rest = consumer.call(consumer.compile(src), [consumer.put(a) for a in inputs])
    return [first] + [np.asarray(r.to_host() if hasattr(r, "to_host") else r) for r in rest]


def close(got, want):
    return len(got) == len(want) and all(
        g.shape == w.shape and np.allclose(g, w, rtol=1e-6, atol=1e-5) for g, w in zip(got, want))


def main():
    failures = 0
    version = importlib.metadata.version("iree-base-compiler")
    with tempfile.TemporaryDirectory() as tmp:
        port.WORK = tmp  # IREE's compiled modules
        iree, xla = port.Iree(), port.Xla()
        for d in DEFECTS:
            err = iree_rejection(d["defect"], tmp)
            if err is None:
                print(f"FAIL {d['name']}: IREE {version} now compiles it; the workaround "
                      f"({d['workaround']}) may go: update docs/portability.md and this test")
                failures += 1
            elif d["message"] not in err:
                print(f"FAIL {d['name']}: IREE {version} rejects it with another message:\n"
                      f"{err[-2000:]}")
                failures += 1
            else:
                print(f"ok   {d['name']}: IREE {version} still rejects it: {d['message']}")
            if not close(values(xla, d["defect"], tmp, d["inputs"]), d["expect"]):
                print(f"FAIL {d['name']}: XLA's values differ from the expected ones")
                failures += 1
            # The emitter's form: a rejection here is a SystemExit naming IREE's message.
            if not all(close(values(c, d["emitted"], tmp, d["inputs"]), d["expect"])
                       for c in (iree, xla)):
                print(f"FAIL {d['name']}: the emitter's form computes other values")
                failures += 1
            else:
                print(f"ok   {d['name']}: the emitter's form ({d['workaround']}) compiles and "
                      "computes the expected values on IREE and XLA")
    print(f"iree_defects: {len(DEFECTS)} defects checked, {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
