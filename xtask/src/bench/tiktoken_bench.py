"""Python tiktoken on the documents pith counted: used by `cargo xtask bench`.

argv: DOCS_JSON RUNS ASSETS_DIR CACHE_DIR. Installs the BPE files of ASSETS_DIR
(`NAME.tiktoken` as tiktoken-rs ships them, or gzipped `NAME.tiktoken.gz`) as tiktoken's
cache (tiktoken would download them otherwise; it checks their hash), then times
encode_ordinary (loop) and encode_ordinary_batch with 1 and 2 threads on o200k_base.
Prints one JSON object: {mode: {"count": N, "seconds": [..]}}.
"""
import gzip
import hashlib
import json
import os
import shutil
import sys
import time

docs_path, runs, assets, cache = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
os.makedirs(cache, exist_ok=True)
for name in ("o200k_base", "cl100k_base"):
    url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
    target = os.path.join(cache, hashlib.sha1(url.encode()).hexdigest())
    if not os.path.exists(target):
        plain = os.path.join(assets, f"{name}.tiktoken")
        if os.path.exists(plain):
            shutil.copyfile(plain, target)
        else:
            with gzip.open(plain + ".gz", "rb") as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst)
os.environ["TIKTOKEN_CACHE_DIR"] = cache

import tiktoken  # noqa: E402  (after the cache is in place)

with open(docs_path, encoding="utf-8") as f:
    docs = json.load(f)
enc = tiktoken.get_encoding("o200k_base")


def measure(count):
    seconds, total = [], None
    for _ in range(runs):
        start = time.perf_counter()
        total = count()
        seconds.append(time.perf_counter() - start)
    return {"count": total, "seconds": seconds}


out = {
    "python tiktoken encode_ordinary, 1 thread": measure(
        lambda: sum(len(enc.encode_ordinary(d)) for d in docs)
    ),
    "python tiktoken encode_ordinary_batch, 1 thread": measure(
        lambda: sum(map(len, enc.encode_ordinary_batch(docs, num_threads=1)))
    ),
    "python tiktoken encode_ordinary_batch, 2 threads": measure(
        lambda: sum(map(len, enc.encode_ordinary_batch(docs, num_threads=2)))
    ),
}
out["version"] = tiktoken.__version__
print(json.dumps(out))
