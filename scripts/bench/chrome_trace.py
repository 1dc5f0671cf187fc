#!/usr/bin/env python3
"""Chrome's own trace of a sweep's browser, for splitting its main threads' work by task
(docs/performance.md#chrome-trace; scripts/bench/trace_split.py reads the files).

    python3 scripts/bench/chrome_trace.py [--port 9333] [--window 4] [--windows 3] [--out DIR] -- COMMAND ...

Runs COMMAND (e.g. ./target/release/skillshift local --workers 1 --families data/calibration_set.json) with
`--remote-debugging-port=PORT` added to SKILLSHIFT_CHROMIUM_ARGS, so the worker's headless shell also listens
on that port beside its DevTools pipe. With several workers only the first browser binds the port. Each window
waits for a browser it has not traced yet that has a site's page open (a worker starts a new one every 50
attempts; a browser started only for the preflight check never opens one), records every
process's trace events for WINDOW seconds through the DevTools `Tracing` domain, and writes them to
DIR/trace-N.json. A window whose browser closes before its trace is read is dropped and taken again on the next
browser. COMMAND then runs to its end; its exit status is this script's.

Only the standard library: the DevTools WebSocket is spoken here (RFC 6455, text frames, client masking).
Tracing slows the browser, so a trace gives shares of the work, not its speed.
"""
import argparse
import base64
import json
import os
import socket
import struct
import subprocess
import sys
import time
import urllib.parse
import urllib.request

CATEGORIES = (
    "toplevel,blink,v8,devtools,devtools.timeline,disabled-by-default-devtools.timeline,loading,navigation,"
    "cc,viz,gpu,renderer,renderer_host,browser,content,benchmark"
)


class Closed(Exception):
    """The browser closed the socket (it was recycled or the sweep ended)."""


class WebSocket:
    def __init__(self, url, timeout):
        u = urllib.parse.urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        # No Origin header: Chrome refuses a WebSocket whose origin is not allowed.
        self.sock.sendall(
            (f"GET {u.path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n"
             f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise Closed("the handshake was cut")
            head += chunk
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status:
            raise Closed(f"the handshake was refused: {status.decode(errors='replace')}")
        self.buf = head.split(b"\r\n\r\n", 1)[1]

    def send(self, text):
        data = text.encode()
        n = len(data)
        head = bytes([0x81])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack(">H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack(">Q", n)
        mask = os.urandom(4)
        self.sock.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _read(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise Closed("the browser closed the socket")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self):
        parts = []
        while True:
            b0, b1 = self._read(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._read(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._read(8))[0]
            payload = self._read(n)
            op = b0 & 0x0F
            if op == 0x8:
                raise Closed("the browser closed the socket")
            if op in (0x9, 0xA):  # ping, pong: Chrome sends none unasked
                continue
            parts.append(payload)
            if b0 & 0x80:
                return json.loads(b"".join(parts))


class Browser:
    def __init__(self, url):
        self.ws = WebSocket(url, timeout=60)
        self.next = 0

    def call(self, method, params=None):
        self.next += 1
        self.ws.send(json.dumps({"id": self.next, "method": method, "params": params or {}}))
        return self.wait(lambda m: m.get("id") == self.next)

    def wait(self, match):
        while True:
            m = self.ws.recv()
            if match(m):
                if "error" in m:
                    raise RuntimeError(f"{m['error']}")
                return m


def browser_url(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=2) as r:
            return json.load(r)["webSocketDebuggerUrl"]
    except (OSError, ValueError, KeyError):
        return None


def serving(port):
    """Whether the browser on `port` has a page open on a site: a worker's browser at its attempts, not one
    started only to check that a browser starts (`local`'s preflight, closed at once)."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as r:
            targets = json.load(r)
    except (OSError, ValueError):
        return False
    return any(t.get("type") == "page" and str(t.get("url", "")).startswith("http") for t in targets)


def trace_window(url, seconds, path):
    b = Browser(url)
    b.call("Tracing.start", {"transferMode": "ReturnAsStream", "streamFormat": "json", "traceConfig": {
        "recordMode": "recordContinuously", "traceBufferSizeInKb": 400_000,
        "includedCategories": CATEGORIES.split(",")}})
    time.sleep(seconds)
    b.ws.send(json.dumps({"id": 0, "method": "Tracing.end"}))
    done = b.wait(lambda m: m.get("method") == "Tracing.tracingComplete")
    stream = done["params"]["stream"]
    tmp = path + ".part"
    with open(tmp, "w") as f:
        while True:
            r = b.call("IO.read", {"handle": stream, "size": 1 << 20})["result"]
            data = base64.b64decode(r["data"]).decode() if r.get("base64Encoded") else r["data"]
            f.write(data)
            if r.get("eof"):
                break
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=9333)
    ap.add_argument("--window", type=float, default=4.0, help="seconds per trace (default 4)")
    ap.add_argument("--windows", type=int, default=3, help="traces to take (default 3)")
    ap.add_argument("--out", default="target/chrome-trace")
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        print("chrome_trace.py: no command (chrome_trace.py [OPTIONS] -- COMMAND ...)", file=sys.stderr)
        return 2
    if a.window <= 0 or a.windows < 1:
        print("chrome_trace.py: --window must be above 0 and --windows at least 1", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    env = dict(os.environ)
    env["SKILLSHIFT_CHROMIUM_ARGS"] = (env.get("SKILLSHIFT_CHROMIUM_ARGS", "") + f" --remote-debugging-port={a.port}").strip()
    proc = subprocess.Popen(cmd, env=env)
    seen, taken = set(), 0
    while taken < a.windows and proc.poll() is None:
        url = browser_url(a.port)
        if url is None or url in seen or not serving(a.port):
            time.sleep(0.05)
            continue
        seen.add(url)
        path = os.path.join(a.out, f"trace-{taken + 1}.json")
        try:
            trace_window(url, a.window, path)
        except (Closed, OSError) as e:
            if os.path.exists(path + ".part"):
                os.remove(path + ".part")
            print(f"chrome_trace.py: a window was lost ({e}); taking it on the next browser", file=sys.stderr)
            continue
        taken += 1
        print(f"chrome_trace.py: {path}", file=sys.stderr)
    status = proc.wait()
    if taken < a.windows:
        print(f"chrome_trace.py: {taken} of {a.windows} windows taken before the command ended", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
