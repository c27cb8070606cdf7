"""`python -m bench.yaml_reader` (after `make render STACK=dev`): the fast path and long-list pre-pass of kubefacts.yamlread on real inputs: the corpus files and
the dev render's manifests, each read through load_documents (as shipped), _load_checked only
(no one-pass reader, no pre-pass) and the pre-pass alone."""
import glob
import time
from pathlib import Path

from kubefacts import yamlread
from kubefacts.yamllists import refuse_long_list
ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" if (ROOT.parent / "shared").is_dir() else Path("/work/shared")
files = sorted(glob.glob(f"{SHARED}/realworld2/corpus/**/*.y*ml", recursive=True)
               + glob.glob(f"{SHARED}/import_corpus/**/*.y*ml", recursive=True)
               + glob.glob(f"{ROOT}/build/dev/manifests/*.yaml"))
texts = [(f, yamlread.read_text(f)) for f in files]
size = sum(len(t) for _, t in texts)


def bench(name, fn, repeat=5):
    best = min(_run(fn) for _ in range(repeat))
    print(f"{name:<34} {best*1000:8.1f} ms")


def _run(fn):
    t = time.perf_counter()
    for f, text in texts:
        try:
            fn(text, f)
        except yamlread.UnsafeInput:
            pass
    return time.perf_counter() - t


print(f"{len(texts)} files, {size/1e6:.2f} MB")
bench("load_documents (shipped)", lambda t, f: yamlread.load_documents(t, f))
bench("_load_checked (no fast path)", lambda t, f: (refuse_long_list(t, f, yamlread.DEFAULT_LIMITS), yamlread._load_checked(t, f)))
bench("one-pass reader alone", lambda t, f: yamlread._load_plain(t, yamlread.DEFAULT_LIMITS))
bench("long-list pre-pass alone", lambda t, f: refuse_long_list(t, f, yamlread.DEFAULT_LIMITS))
