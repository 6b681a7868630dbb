#!/usr/bin/env python3
"""The runtime-only `strata-gpu serve ARTIFACT` (no compiler) serves a CPU
artifact from `strata compile`: its greedy completion equals `strata run`
of the same artifact; SIGINT exits 0.

    serve_artifact_test.py STRATA STRATA_GPU MODEL_DIR WORK_DIR
"""
import json
import shutil
import subprocess
import sys
import urllib.request

from serve_util import start_server

strata, strata_gpu, model, work = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
subprocess.run([strata, "compile", model, "-o", work], check=True, capture_output=True)
ref = json.loads(subprocess.run([strata, "run", work, "--prompt", "paged attention", "--max-new-tokens", "8",
                                 "--ignore-eos", "--json"], check=True, capture_output=True, text=True).stdout)
proc, url, _ = start_server([strata_gpu, "serve", work, "--port", "0"])
try:
    body = json.dumps({"model": work.rstrip("/").split("/")[-1], "prompt": "paged attention", "max_tokens": 8,
                       "temperature": 0, "ignore_eos": True}).encode()
    req = urllib.request.Request(url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    got = json.loads(urllib.request.urlopen(req, timeout=60).read())
    assert got["choices"][0]["text"] == ref["text"], (got, ref)
    assert got["usage"]["completion_tokens"] == 8, got
finally:
    proc.send_signal(2)
    rc = proc.wait(timeout=60)
assert rc == 0, f"strata-gpu serve exited {rc}"
print("serve_artifact_test: strata-gpu serve equals strata run")
