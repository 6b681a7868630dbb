#!/usr/bin/env python3
"""`strata serve` of the bundled tiny model on the CPU, driven by the real
OpenAI Python client (pinned in scripts/requirements-test.txt): completions
and chats, streaming and not, n with seeds, stop strings, logprobs, usage;
greedy output over HTTP equals `strata run`'s; every error case answered
with its status and an OpenAI-shaped body; a client that disconnects
mid-stream is cancelled and its KV blocks return.

    serve_test.py STRATA MODEL_DIR CHAT_TEMPLATE
"""
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import openai
from serve_util import start_server

STRATA, MODEL, TEMPLATE = sys.argv[1:4]
KEY = "test-key"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print(f"FAIL: {what}", flush=True)
        for server in Server.running:
            print(f"server log:\n{server.tail()}", flush=True)


class Server:
    running = []

    def __init__(self, *flags):
        # (the first start compiles the CPU kernels: no timeout of its own)
        self.proc, self.url, self.log = start_server([STRATA, "serve", MODEL, "--port", "0", *flags])
        Server.running.append(self)

    def tail(self):
        return "".join(self.log[-20:])

    def stop(self):
        self.proc.send_signal(2)  # SIGINT: finish what runs, exit 0
        rc = self.proc.wait(timeout=60)
        Server.running.remove(self)
        check(rc == 0, f"serve exits 0 on SIGINT (got {rc})")


def raw(server, method, path, body=None, headers=None):
    """(status, headers, parsed JSON or text) of one plain HTTP request."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    req = urllib.request.Request(server.url + path, data=data, method=method,
                                 headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            status, hdrs, text = r.status, dict(r.headers), r.read().decode()
    except urllib.error.HTTPError as e:
        status, hdrs, text = e.code, dict(e.headers), e.read().decode()
    try:
        return status, hdrs, json.loads(text)
    except json.JSONDecodeError:
        return status, hdrs, text


def api_error(status, body, code_or_param, what):
    ok = isinstance(body, dict) and set(body.get("error", {})) == {"message", "type", "param", "code"}
    check(ok, f"{what}: an OpenAI-shaped error body (got {body})")
    if ok:
        e = body["error"]
        check(code_or_param in (e["code"], e["param"]) or code_or_param in e["message"],
              f"{what}: the error names '{code_or_param}' ({e})")


def strata_run(*args):
    out = subprocess.run([STRATA, "run", MODEL, "--json", *args], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def on_alarm(signum, frame):
    import traceback
    traceback.print_stack(frame)
    for server in Server.running:
        print(f"server log:\n{server.tail()}", flush=True)
        server.proc.kill()
    os._exit(1)


def main():
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(400)  # a hang is a failure with the server's log, not a stuck suite
    s = Server("--chat-template", TEMPLATE, "--api-key", KEY, "--max-tokens", "64", "--max-prompt-tokens", "200",
               "--max-body-bytes", "65536")
    client = openai.OpenAI(base_url=s.url + "/v1", api_key=KEY, max_retries=0, timeout=60)
    model = "tiny-llama"
    prompt = "paged attention keeps"

    # Greedy completions equal strata run; streaming gives the same text.
    ref = strata_run("--prompt", prompt, "--max-new-tokens", "12", "--ignore-eos")
    r = client.completions.create(model=model, prompt=prompt, max_tokens=12, temperature=0, extra_body={"ignore_eos": True})
    check(r.choices[0].text == ref["text"], f"greedy completion equals strata run ({r.choices[0].text!r} vs {ref['text']!r})")
    check(r.usage.prompt_tokens == ref["prompt_tokens"] and r.usage.completion_tokens == 12,
          f"completion usage ({r.usage})")
    check(r.choices[0].finish_reason == "length", "finish_reason length")
    check(r.object == "text_completion" and r.model == model and r.id.startswith("cmpl-"), "completion fields")
    text, usage, finish = "", None, None
    for chunk in client.completions.create(model=model, prompt=prompt, max_tokens=12, temperature=0, stream=True,
                                           stream_options={"include_usage": True}, extra_body={"ignore_eos": True}):
        if chunk.choices:
            text += chunk.choices[0].text
            finish = chunk.choices[0].finish_reason or finish
        if chunk.usage:
            usage = chunk.usage
    check(text == ref["text"] and finish == "length", f"streamed completion equals the non-streamed one ({text!r})")
    check(usage is not None and usage.completion_tokens == 12 and usage.total_tokens == usage.prompt_tokens + 12,
          f"stream usage chunk ({usage})")

    # Penalties and min_p reach the sampler as strata run's flags do: the same
    # greedy tokens (presence / frequency) and the same seeded draw (min_p).
    pen = strata_run("--prompt", prompt, "--max-new-tokens", "12", "--ignore-eos", "--presence-penalty", "1.5",
                     "--frequency-penalty", "0.5")
    check(pen["text"] != ref["text"], "the penalties change the greedy continuation")
    r = client.completions.create(model=model, prompt=prompt, max_tokens=12, temperature=0, presence_penalty=1.5,
                                  frequency_penalty=0.5, extra_body={"ignore_eos": True})
    check(r.choices[0].text == pen["text"], f"penalized completion equals strata run ({r.choices[0].text!r})")
    mp = strata_run("--prompt", prompt, "--max-new-tokens", "12", "--ignore-eos", "--temperature", "1.5", "--min-p",
                    "0.2", "--seed", "9")
    r = client.completions.create(model=model, prompt=prompt, max_tokens=12, temperature=1.5, seed=9,
                                  extra_body={"ignore_eos": True, "min_p": 0.2})
    check(r.choices[0].text == mp["text"], f"min_p completion equals strata run ({r.choices[0].text!r})")

    # Prompts as a list and as token ids.
    r = client.completions.create(model=model, prompt=[prompt, "tile programs"], max_tokens=4, temperature=0)
    check(len(r.choices) == 2 and r.choices[0].text == ref["text"][:len(r.choices[0].text)], "a list of prompts")
    r = client.completions.create(model=model, prompt=ref["token_ids"][:ref["prompt_tokens"]], max_tokens=12,
                                  temperature=0, extra_body={"ignore_eos": True})
    check(r.choices[0].text == ref["text"], "a token-id prompt")

    # Chat: the template's prompt (same token count as strata run --chat), greedy equal streamed.
    chat_ref = strata_run("--chat", "--chat-template", TEMPLATE, "--prompt", "hello there", "--max-new-tokens", "10",
                          "--ignore-eos")
    messages = [{"role": "user", "content": "hello there"}]
    r = client.chat.completions.create(model=model, messages=messages, max_tokens=10, temperature=0,
                                       extra_body={"ignore_eos": True})
    check(r.usage.prompt_tokens == chat_ref["prompt_tokens"], f"chat prompt tokens ({r.usage.prompt_tokens} vs "
                                                               f"{chat_ref['prompt_tokens']})")
    check(r.choices[0].message.content == chat_ref["text"], "greedy chat equals strata run --chat")
    check(r.choices[0].message.role == "assistant" and r.object == "chat.completion", "chat fields")
    parts, roles = "", 0
    for chunk in client.chat.completions.create(model=model, messages=[{"role": "user", "content": [
            {"type": "text", "text": "hello there"}]}], max_tokens=10, temperature=0, stream=True,
            extra_body={"ignore_eos": True}):
        for c in chunk.choices:
            roles += c.delta.role == "assistant"
            parts += c.delta.content or ""
    check(parts == chat_ref["text"] and roles == 1, "streamed chat (text parts) equals the JSON one")

    # n = 3 with a seed: reproducible, and sample k is the single request with seed + k.
    a = client.completions.create(model=model, prompt=prompt, max_tokens=8, n=3, seed=5, temperature=1.0)
    b = client.completions.create(model=model, prompt=prompt, max_tokens=8, n=3, seed=5, temperature=1.0)
    check([c.text for c in a.choices] == [c.text for c in b.choices], "n=3 with a seed is reproducible")
    check(sorted(c.index for c in a.choices) == [0, 1, 2], "n=3 gives indexes 0, 1, 2")
    one = client.completions.create(model=model, prompt=prompt, max_tokens=8, seed=6, temperature=1.0)
    check(one.choices[0].text == a.choices[1].text, "sample 1 of seed 5 equals seed 6 alone")
    check(a.usage.completion_tokens == sum(8 for _ in a.choices) or all(c.finish_reason == "stop" for c in a.choices),
          "n=3 usage counts every choice")

    # Stop strings cut the text before them.
    long_ref = client.completions.create(model=model, prompt=prompt, max_tokens=24, temperature=0,
                                         extra_body={"ignore_eos": True}).choices[0].text
    # A stop string of printable ASCII (the random model also writes bytes
    # that decode to U+FFFD).
    at = next(i for i in range(2, len(long_ref) - 1) if long_ref[i:i + 2].isascii() and long_ref[i:i + 2].isprintable())
    stop = long_ref[at:at + 2]
    r = client.completions.create(model=model, prompt=prompt, max_tokens=24, temperature=0, stop=[stop, "\x01never"],
                                  extra_body={"ignore_eos": True})
    check(r.choices[0].text == long_ref[:long_ref.find(stop)] and r.choices[0].finish_reason == "stop",
          f"stop string {stop!r}: {r.choices[0].text!r}")
    text = "".join(c.choices[0].text for c in client.completions.create(
        model=model, prompt=prompt, max_tokens=24, temperature=0, stop=stop, stream=True,
        extra_body={"ignore_eos": True}) if c.choices)
    check(text == long_ref[:long_ref.find(stop)], f"streamed stop string ({text!r})")

    # Log-probabilities: the greedy token is the most likely one.
    r = client.completions.create(model=model, prompt=prompt, max_tokens=5, temperature=0, logprobs=3,
                                  extra_body={"ignore_eos": True})
    lp = r.choices[0].logprobs
    check(len(lp.tokens) == 5 and len(lp.token_logprobs) == 5 and all(len(t) <= 3 for t in lp.top_logprobs),
          "completion logprobs shape")
    # (top_logprobs is keyed by text: byte tokens that print alike share a key)
    check(all(v <= 0 for v in lp.token_logprobs) and
          all(v >= max(t.values()) - 1e-4 for v, t in zip(lp.token_logprobs, lp.top_logprobs)),
          "greedy tokens carry the top log-probability")
    r = client.chat.completions.create(model=model, messages=messages, max_tokens=4, temperature=0, logprobs=True,
                                       top_logprobs=2, extra_body={"ignore_eos": True})
    content = r.choices[0].logprobs.content
    check(len(content) == 4 and all(len(c.top_logprobs) == 2 and c.logprob <= 0 for c in content), "chat logprobs")
    check(all(abs(c.logprob - c.top_logprobs[0].logprob) < 1e-5 and c.top_logprobs[0].logprob >= c.top_logprobs[1].logprob
              for c in content), "chat: the greedy token is the first alternative")

    # Errors: status and OpenAI's shape.
    auth = {"Authorization": "Bearer " + KEY}
    st, _, body = raw(s, "POST", "/v1/completions", b"{not json", auth)
    check(st == 400, f"bad JSON is 400 ({st})")
    api_error(st, body, "JSON", "bad JSON")
    st, _, body = raw(s, "POST", "/v1/completions", {"model": model, "prompt": "x", "frobnicate": 1}, auth)
    check(st == 400, "an unknown field is 400")
    api_error(st, body, "frobnicate", "unknown field")
    for field, value in [("temperature", 9), ("n", 0), ("max_tokens", -1), ("top_p", 0), ("stop", [1]), ("seed", "x"),
                         ("logprobs", 50), ("presence_penalty", 3.0), ("min_p", -0.1)]:
        st, _, body = raw(s, "POST", "/v1/completions", {"model": model, "prompt": "x", field: value}, auth)
        check(st == 400, f"{field}={value!r} is 400 ({st})")
        api_error(st, body, field, f"{field}={value!r}")
    st, _, body = raw(s, "POST", "/v1/completions", {"model": model, "prompt": "word " * 300}, auth)
    check(st == 400, "a prompt over --max-prompt-tokens is 400")
    api_error(st, body, "--max-prompt-tokens", "prompt limit")
    st, _, body = raw(s, "POST", "/v1/completions", {"model": model, "prompt": "x", "max_tokens": 65}, auth)
    api_error(st, body, "--max-tokens", "max_tokens limit")
    st, _, body = raw(s, "POST", "/v1/completions", {"model": model, "prompt": [100000]}, auth)
    api_error(st, body, "vocabulary", "token id outside the vocabulary")
    st, _, body = raw(s, "POST", "/v1/chat/completions", {"model": model, "messages": [{"role": "robot", "content": "x"}]},
                      auth)
    api_error(st, body, "messages[0].role", "bad role")
    try:
        openai.OpenAI(base_url=s.url + "/v1", api_key="wrong", max_retries=0).models.list()
        check(False, "a wrong key is refused")
    except openai.AuthenticationError as e:
        check(e.status_code == 401, "a wrong key is 401")
    try:
        client.completions.create(model="gpt-4", prompt="x", max_tokens=1)
        check(False, "an unknown model is refused")
    except openai.NotFoundError as e:
        check(e.status_code == 404 and e.body.get("code") == "model_not_found", f"an unknown model is 404 ({e.body})")
    st, _, body = raw(s, "GET", "/v1/nothing", None, auth)
    check(st == 404, "an unknown route is 404")
    api_error(st, body, "not_found", "unknown route")
    st, _, body = raw(s, "GET", "/v1/completions", None, auth)
    check(st == 405, "GET on a POST route is 405")
    st, _, body = raw(s, "POST", "/v1/completions", {"model": model, "prompt": "x" * 70000}, auth)
    check(st == 413, f"an oversized body is 413 ({st})")
    api_error(st, body, "request_too_large", "oversized body")
    models = client.models.list()
    check([m.id for m in models.data] == [model], "GET /v1/models lists the model")
    st, _, body = raw(s, "GET", "/health")
    check(st == 200, "GET /health")

    # Prefix caching: prompts sharing a long prefix; the shared blocks are
    # found again (the hit counter grows); outputs are compared with a server
    # without the cache below.
    shared_prompts = ["The paged attention kernel reads keys and values block by block. " * 2 + tail
                      for tail in ["First:", "Second one:", "Third,"]]
    cached_out = [client.completions.create(model=model, prompt=p, max_tokens=10, temperature=0,
                                            extra_body={"ignore_eos": True}).choices[0].text for p in shared_prompts]
    _, _, metrics = raw(s, "GET", "/metrics")
    hits = re.search(r"^strata:prefix_cache_hit_tokens_total (\S+)", metrics, re.M)
    check(hits and float(hits.group(1)) >= 64, f"prefix cache hits ({hits and hits.group(1)})")

    # A client that goes away mid-stream is cancelled; its blocks return.
    sock = socket.create_connection((s.url.split("//")[1].split(":")[0], int(s.url.rsplit(":", 1)[1])))
    req = json.dumps({"model": model, "prompt": prompt, "max_tokens": 64, "stream": True, "ignore_eos": True}).encode()
    sock.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAuthorization: Bearer "
                 + KEY.encode() + b"\r\nContent-Length: " + str(len(req)).encode() + b"\r\n\r\n" + req)
    sock.recv(512)
    sock.close()
    deadline = time.time() + 30
    while time.time() < deadline:
        _, _, metrics = raw(s, "GET", "/metrics")
        cancelled = re.search(r'strata:requests_total\{outcome="cancelled"\} (\S+)', metrics)
        used = re.search(r'strata:kv_cache_blocks\{state="used"\} (\S+)', metrics)
        if cancelled and float(cancelled.group(1)) >= 1 and used and float(used.group(1)) == 0:
            break
        time.sleep(0.2)
    check(cancelled and float(cancelled.group(1)) >= 1, "a disconnected stream is counted as cancelled")
    check(used and float(used.group(1)) == 0, "no KV block is held after the load drains")
    for name in ["time_to_first_token_seconds", "inter_token_latency_seconds", "e2e_request_latency_seconds",
                 "prompt_tokens_total", "generation_tokens_total", "num_preemptions_total", "queue_length"]:
        check(f"strata:{name}" in metrics, f"/metrics has strata:{name}")
    s.stop()

    # A full queue is answered 503 with Retry-After (this server computes
    # every prompt in full: the same outputs as with prefix caching).
    q = Server("--max-queue", "1", "--max-seqs", "1", "--no-prefix-cache")
    qc = openai.OpenAI(base_url=q.url + "/v1", api_key="none", max_retries=0)
    plain_out = [qc.completions.create(model=model, prompt=p, max_tokens=10, temperature=0,
                                       extra_body={"ignore_eos": True}).choices[0].text for p in shared_prompts]
    check(plain_out == cached_out, "outputs with and without the prefix cache are equal")
    statuses = []

    def long_request():
        statuses.append(raw(q, "POST", "/v1/completions", {"model": model, "prompt": prompt, "max_tokens": 200,
                                                           "ignore_eos": True}))

    threads = [threading.Thread(target=long_request) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    refused = [r for r in statuses if r[0] == 503]
    check(refused and all("Retry-After" in h for _, h, _ in refused), "a full queue is 503 with Retry-After")
    check(any(r[0] == 200 for r in statuses), "the queue's own requests complete")
    if refused:
        api_error(503, refused[0][2], "queue_full", "queue full")
    q.stop()

    if failures:
        sys.exit(f"{len(failures)} check(s) failed")
    print("serve_test: all checks passed")


if __name__ == "__main__":
    try:
        main()
    finally:
        for server in list(Server.running):  # an exception: show the server's side, leave nothing running
            print(f"server log:\n{server.tail()}", flush=True)
            server.proc.kill()
