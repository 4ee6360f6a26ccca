"""The bundled model with its int8 weights kept int8 in memory.

The packaged all-MiniLM-L6-v2 stores its weights as int8 with a scale per output column (each
`MatMul` takes `Cast(W_int8) * scale`; the word and position tables are `Gather`ed from
`Cast(E_int8) * scale`). onnxruntime's constant folding turns every one of them into float32
when the session starts: 22 MB of weights become ~90 MB, and the session ~160 MB resident.
This rewrites the graph so they stay int8:

- each such `MatMul` becomes `MatMulNBits` (bits 8, blocks of 16 along K, zero point 128): the
  weight as uint8 `W + 128` with the column's scale repeated per block, so the stored numbers are
  exactly the model's; `accuracy_level` 4 lets onnxruntime quantize the activations per block
  and multiply in int8 (single queries are as fast as the float model's; at level 0 it
  dequantizes the whole weight on every run, ~2.5x slower). That is the one change of numbers:
  embeddings differ from the float model's by cosine >= 0.999 (checked when the file is made,
  measured by benchmarks.sessions).
- each embedding `Gather` gathers the int8 rows first and scales only those (the same numbers).

`onnx` (a maintained library: the graph is a protobuf, and its checker validates the result) is
imported only here, once per machine, when the model folder is prepared.
"""

from __future__ import annotations

from pathlib import Path

BLOCK = 16  # along K: smaller blocks quantize the activations more finely (cosine .9997 min at 16, .9995 at 32)
ACCURACY_LEVEL = 4  # int8 compute
VERSION = 1  # of this rewrite: a prepared folder made by another version is made again


def _producers(graph) -> dict[str, object]:
    return {out: node for node in graph.node for out in node.output}


def _dequantized(name: str, producers, initializers) -> tuple[str, str] | None:
    """(int8 initializer, scale initializer) when `name` is `Cast(int8 init) * scale`."""
    mul = producers.get(name)
    if mul is None or mul.op_type != "Mul" or len(mul.input) != 2:
        return None
    cast = producers.get(mul.input[0])
    if cast is None or cast.op_type != "Cast" or cast.input[0] not in initializers:
        return None
    if mul.input[1] not in initializers:
        return None
    return cast.input[0], mul.input[1]


def _matmul_nbits(node, weight, scale, helper, numpy_helper, np) -> tuple[list, list]:
    w = numpy_helper.to_array(weight)
    s = numpy_helper.to_array(scale).reshape(-1)
    k, n = w.shape
    if k % BLOCK or s.shape != (n,):
        return [node], []
    blocks = k // BLOCK
    packed = (w.astype(np.int16) + 128).astype(np.uint8).T.reshape(n, blocks, BLOCK)
    base = weight.name
    inits = [
        numpy_helper.from_array(np.ascontiguousarray(packed), base + ".q8"),
        numpy_helper.from_array(np.repeat(s.astype(np.float32), blocks), base + ".q8_scales"),
        numpy_helper.from_array(np.full((n, blocks), 128, np.uint8), base + ".q8_zero"),
    ]
    new = helper.make_node(
        "MatMulNBits",
        [node.input[0], base + ".q8", base + ".q8_scales", base + ".q8_zero"],
        list(node.output),
        name=node.name + ".q8",
        domain="com.microsoft",
        K=k,
        N=n,
        bits=8,
        block_size=BLOCK,
        accuracy_level=ACCURACY_LEVEL,
    )
    return [new], inits


def _gather_rows(node, table: str, scale: str, helper, tensor_proto) -> list:
    out, ids = node.output[0], node.input[1]
    return [
        helper.make_node("Gather", [table, ids], [out + ".q8"], name=node.name + ".q8", axis=0),
        helper.make_node("Cast", [out + ".q8"], [out + ".f"], name=node.name + ".f", to=tensor_proto.FLOAT),
        helper.make_node("Gather", [scale, ids], [out + ".s"], name=node.name + ".s", axis=0),
        helper.make_node("Mul", [out + ".f", out + ".s"], [out], name=node.name + ".scaled"),
    ]


def write_int8_model(src: Path, dst: Path) -> int:
    """Write `src` rewritten to `dst` (see the module's docstring) -> how many nodes changed.
    Raises ValueError when nothing matched (another model's layout)."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    producers = _producers(graph)
    initializers = {i.name: i for i in graph.initializer}
    replaced: dict[str, list] = {}
    added: list = []
    for node in graph.node:
        if node.op_type == "MatMul" and len(node.input) == 2:
            found = _dequantized(node.input[1], producers, initializers)
            if found:
                new, inits = _matmul_nbits(node, *(initializers[n] for n in found), helper, numpy_helper, np)
                if inits:
                    replaced[node.name], added = new, added + inits
        elif node.op_type == "Gather" and not any(a.name == "axis" and a.i != 0 for a in node.attribute):
            found = _dequantized(node.input[0], producers, initializers)
            if found:
                replaced[node.name] = _gather_rows(node, *found, helper, TensorProto)
    if not replaced:
        raise ValueError(f"{src}: no int8 weights in the layout this rewrite knows")
    nodes = [n for node in graph.node for n in replaced.get(node.name, [node])]
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(added)
    _drop_unused(graph)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))
    return len(replaced)


def _drop_unused(graph) -> None:
    """Nodes and initializers nothing reads any more (the old Cast / Mul and float weights)."""
    outputs = {o.name for o in graph.output}
    while True:
        used = {i for node in graph.node for i in node.input} | outputs
        dead = [n for n in graph.node if not any(o in used for o in n.output)]
        if not dead:
            break
        for node in dead:
            graph.node.remove(node)
    used = {i for node in graph.node for i in node.input}
    keep = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(keep)
