#!/usr/bin/env python3
"""Soak test of `strata serve` on loopback (bounded in count and time):
REQUESTS requests, CONCURRENCY at once, over raw HTTP/1.1 connections:
streaming and plain completions and chats (n up to 3, stop strings),
clients that disconnect mid-stream, slow readers, malformed JSON, bad
fields and oversized bodies. Every request must be answered (a complete
stream ending in [DONE], or a JSON body) or refused with an OpenAI-shaped
error; the server must stay up; after the load drains /metrics must show
no KV block in use and every request accounted for; SIGINT must exit 0.
Then 1,000 streams at once: all complete, with the server's threads and
memory bounded (sampled from /proc).

    serve_soak.py STRATA MODEL_DIR CHAT_TEMPLATE [REQUESTS] [CONCURRENCY]
"""
import asyncio
import json
import random
import re
import sys
import time

from serve_util import start_server

STRATA, MODEL, TEMPLATE = sys.argv[1:4]
REQUESTS = int(sys.argv[4]) if len(sys.argv) > 4 else 1000
CONCURRENCY = int(sys.argv[5]) if len(sys.argv) > 5 else 250
MAX_BODY = 32768
WIDE = 1000  # streams at once in the second phase


def dechunk(data):
    out, i = b"", 0
    while True:
        j = data.find(b"\r\n", i)
        if j < 0:
            return out, False
        size = int(data[i:j].split(b";")[0], 16)
        if size == 0:
            return out, True
        out += data[j + 2:j + 2 + size]
        i = j + 2 + size + 2


async def http(port, body, path="/v1/completions", disconnect_after=None, slow=False):
    """(status, headers, body bytes, complete) of one request on its own connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    writer.write(f"POST {path} HTTP/1.1\r\nHost: soak\r\nContent-Type: application/json\r\nConnection: close\r\n"
                 f"Content-Length: {len(raw)}\r\n\r\n".encode() + raw)
    await writer.drain()
    data = b""
    try:
        while True:
            piece = await reader.read(64 if slow else 65536)
            if not piece:
                break
            data += piece
            if slow:
                await asyncio.sleep(0.01)
            if disconnect_after is not None and data.count(b"data: ") >= disconnect_after:
                writer.close()
                return None, {}, b"", False
    finally:
        if not writer.is_closing():
            writer.close()
    head, _, rest = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, v in (l.split(":", 1) for l in lines[1:] if ":" in l)}
    if headers.get("transfer-encoding") == "chunked":
        rest, complete = dechunk(rest)
    else:
        complete = len(rest) == int(headers.get("content-length", len(rest)))
    return status, headers, rest, complete


def is_api_error(body):
    try:
        e = json.loads(body)["error"]
        return set(e) == {"message", "type", "param", "code"} and e["message"]
    except Exception:
        return False


async def one(i, port, rng, problems, counts):
    kind = rng.choices(["stream", "plain", "chat", "disconnect", "slow", "bad_json", "bad_field", "oversized"],
                       [35, 15, 10, 10, 8, 8, 8, 6])[0]
    counts[kind] = counts.get(kind, 0) + 1
    req = {"model": "tiny-llama", "prompt": "soak " * rng.randint(1, 40), "max_tokens": rng.randint(1, 48),
           "temperature": rng.choice([0, 0.8]), "seed": i, "n": rng.choice([1, 1, 1, 2, 3]), "ignore_eos": True}
    if rng.random() < 0.2:
        req["stop"] = ["zz", "\n\n"]
    try:
        if kind in ("stream", "slow"):
            st, h, body, complete = await http(port, {**req, "stream": True}, slow=kind == "slow")
            ok = st == 200 and complete and body.rstrip().endswith(b"data: [DONE]") or (st == 503 and is_api_error(body))
        elif kind == "plain":
            st, h, body, complete = await http(port, req)
            ok = st == 200 and len(json.loads(body)["choices"]) == req["n"] or (st == 503 and is_api_error(body))
        elif kind == "chat":
            chat = {"model": "tiny-llama", "messages": [{"role": "user", "content": "hi " * rng.randint(1, 10)}],
                    "max_tokens": rng.randint(1, 24), "stream": rng.random() < 0.5, "ignore_eos": True}
            st, h, body, complete = await http(port, chat, "/v1/chat/completions")
            ok = st == 200 and complete or (st == 503 and is_api_error(body))
        elif kind == "disconnect":
            await http(port, {**req, "stream": True, "max_tokens": 48}, disconnect_after=rng.randint(1, 3))
            ok = True
        elif kind == "bad_json":
            st, h, body, _ = await http(port, b'{"model": "tiny-llama", "prompt": ' + bytes([rng.randint(0, 255)]) * 3)
            ok = st == 400 and is_api_error(body)
        elif kind == "bad_field":
            bad = rng.choice([{"temperature": -1}, {"n": 100}, {"max_tokens": "x"}, {"prompt": []}, {"nope": 1},
                              {"model": "other"}, {"stop": [""]}])
            st, h, body, _ = await http(port, {**req, **bad})
            ok = st in (400, 404) and is_api_error(body)
        else:  # oversized
            st, h, body, _ = await http(port, {**req, "prompt": "x" * (MAX_BODY + 10)})
            ok = st == 413 and is_api_error(body)
        if not ok:
            problems.append(f"request {i} ({kind}): {st} {body[:300]!r}")
    except Exception as e:  # a dropped connection, a parse failure
        problems.append(f"request {i} ({kind}): {type(e).__name__}: {e}")


async def main_async(port):
    rng = random.Random(1234)
    problems, counts = [], {}
    sem = asyncio.Semaphore(CONCURRENCY)

    async def guarded(i):
        async with sem:
            await one(i, port, rng, problems, counts)

    t0 = time.time()
    await asyncio.gather(*(guarded(i) for i in range(REQUESTS)))
    return problems, counts, time.time() - t0


async def many_streams(port, count):
    """`count` streams at once; returns how many completed."""
    async def stream(i):
        st, _, body, complete = await http(port, {"model": "tiny-llama", "prompt": "wide " * 4, "max_tokens": 8,
                                                  "stream": True, "ignore_eos": True, "seed": i})
        return st == 200 and complete and body.rstrip().endswith(b"data: [DONE]")
    return sum(await asyncio.gather(*(stream(i) for i in range(count))))


def proc_status(pid):
    fields = {}
    for line in open(f"/proc/{pid}/status"):
        k, _, v = line.partition(":")
        fields[k] = v.strip()
    return int(fields["Threads"]), int(fields["VmRSS"].split()[0]) // 1024


def metric(text, name):
    m = re.search(re.escape(name) + r" (\S+)", text)
    return float(m.group(1)) if m else None


def main():
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # 1,000 client sockets
    global WIDE
    WIDE = min(1000, hard - 64)  # where descriptors are capped below that, as many as fit
    if WIDE < 1000:
        print(f"serve_soak: the descriptor limit is {hard}: {WIDE} streams at once, not 1000")
    proc, url, _ = start_server([STRATA, "serve", MODEL, "--port", "0", "--chat-template", TEMPLATE, "--max-seqs", "64",
                                 "--max-queue", "4096", "--max-body-bytes", str(MAX_BODY)])
    port = int(url.rsplit(":", 1)[1])
    problems, counts, seconds = asyncio.run(main_async(port))
    # The load has drained: nothing running, no block held by a request.
    deadline = time.time() + 30
    while True:
        import urllib.request
        metrics = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
        used = metric(metrics, 'strata:kv_cache_blocks{state="used"}')
        running = metric(metrics, 'strata:num_sequences{state="running"}')
        if (used == 0 and running == 0) or time.time() > deadline:
            break
        time.sleep(0.2)
    if used != 0 or running != 0:
        problems.append(f"after the load: {used} KV blocks used, {running} sequences running")
    answered = sum(metric(metrics, f'strata:requests_total{{outcome="{o}"}}') or 0
                   for o in ("ok", "error", "cancelled", "refused"))
    if answered != REQUESTS:
        problems.append(f"the server counted {answered:.0f} requests answered, not {REQUESTS}")

    # 1,000 streams at once, threads and memory sampled while they run.
    threads0, rss0 = proc_status(proc.pid)
    peak = [threads0, rss0]

    async def sample():
        while True:
            t, r = proc_status(proc.pid)
            peak[0], peak[1] = max(peak[0], t), max(peak[1], r)
            await asyncio.sleep(0.05)

    async def wide():
        sampler = asyncio.ensure_future(sample())
        done = await many_streams(port, WIDE)
        sampler.cancel()
        return done

    t0 = time.time()
    done = asyncio.run(wide())
    wide_seconds = time.time() - t0
    if done != WIDE:
        problems.append(f"{done} of {WIDE} concurrent streams completed")
    if peak[0] > threads0:
        problems.append(f"threads grew with connections: {threads0} -> {peak[0]}")
    if peak[1] - rss0 > 512:
        problems.append(f"memory grew by {peak[1] - rss0} MiB for 1000 streams")
    proc.send_signal(2)
    rc = proc.wait(timeout=60)
    if rc != 0:
        problems.append(f"strata serve exited {rc} on SIGINT")
    print(f"serve_soak: {REQUESTS} requests, {CONCURRENCY} at once, {seconds:.1f} s; kinds {counts}; "
          f"server counted {answered:.0f} answered; {WIDE} streams at once in {wide_seconds:.1f} s: {done} complete, "
          f"server threads {threads0} -> {peak[0]}, RSS {rss0} -> {peak[1]} MiB")
    if problems:
        print("\n".join(problems[:30]))
        sys.exit(f"{len(problems)} problem(s)")
    print("serve_soak: no problem")


if __name__ == "__main__":
    main()
