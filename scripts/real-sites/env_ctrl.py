#!/usr/bin/env python3
"""The env-ctrl server of one real WordPress instance (scripts/real-sites.sh starts
one per instance, on the site's port + 1), speaking the routes the worker's env-ctrl
backend uses for WebArena-Verified's images (worker/src/sites.rs `Remote`):

  POST /reset              restores the seeded database dump; {"success": true, ...}
  POST /restart?wait=1     the same (the route of the server WebArena-Verified ships)
  GET  /health, /status    {"success": true} when WordPress answers its front page
  GET  /config             what this instance is: {"success": true, "details": {...}}

Every answer is JSON {"success": bool, "message": str, "details": {...}}. One reset
runs at a time (a second waits up to --lock-wait-s for the first, then is refused);
the restore is bounded by --restore-timeout-s. WordPress keeps no cache outside its
database here (no persistent object cache, WP-Cron off; transients and sessions are
rows), so restoring the database is the whole reset: sessions opened since the seed
are gone, as on the fixture. Python 3 standard library only.
"""

import argparse
import http.server
import json
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HTTP = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def log(msg):
    sys.stderr.write("%s env_ctrl: %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%S"), msg))
    sys.stderr.flush()


class Instance:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.resetting = threading.Event()
        self.resets = 0
        self.last_reset = None
        with open(args.dump, "rb") as f:
            self.dump = f.read()
        with open(args.config_json) as f:
            self.config = json.load(f)

    def probe(self):
        """(healthy, details): WordPress's front page answers 200 within the probe timeout."""
        t0 = time.monotonic()
        try:
            with HTTP.open(self.args.site.rstrip("/") + "/", timeout=self.args.probe_timeout_s) as r:
                body = r.read(1 << 20).decode("utf-8", "replace")
                code = r.status
        except urllib.error.HTTPError as e:
            code, body = e.code, ""
        except Exception as e:  # refused, timed out: not healthy
            return False, {"error": str(e)}
        generator = 'name="generator" content="WordPress ' in body
        return code == 200 and generator, {
            "http_status": code,
            "generator": generator,
            "probe_s": round(time.monotonic() - t0, 3),
        }

    def restore(self):
        cmd = ["mysql", "--defaults-extra-file=" + self.args.mysql_defaults, "--database=" + self.args.db]
        t0 = time.monotonic()
        p = subprocess.run(cmd, input=self.dump, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=self.args.restore_timeout_s)
        if p.returncode != 0:
            raise RuntimeError("mysql exited with %d: %s" % (p.returncode, p.stderr.decode("utf-8", "replace")[:500]))
        return time.monotonic() - t0

    def reset(self):
        if not self.lock.acquire(timeout=self.args.lock_wait_s):
            return 409, False, "another reset is still running", {}
        try:
            self.resetting.set()
            t0 = time.monotonic()
            try:
                restore_s = self.restore()
            except subprocess.TimeoutExpired:
                log("restore timed out")
                return 500, False, "the database restore took longer than %d s" % self.args.restore_timeout_s, {}
            except Exception as e:
                log("restore failed: %s" % e)
                return 500, False, "database restore failed: %s" % e, {}
            healthy, probe = self.probe()
            elapsed = time.monotonic() - t0
            self.resets += 1
            self.last_reset = {"elapsed_s": round(elapsed, 3), "restore_s": round(restore_s, 3),
                               "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
            log("reset %d: restore %.3f s, total %.3f s, healthy %s" % (self.resets, restore_s, elapsed, healthy))
            details = dict(self.last_reset, resets=self.resets, probe=probe)
            if not healthy:
                return 500, False, "restored, but WordPress does not answer its front page", details
            return 200, True, "reset", details
        finally:
            self.resetting.clear()
            self.lock.release()


class Handler(http.server.BaseHTTPRequestHandler):
    server_version = "skillshift-env-ctrl/1"
    protocol_version = "HTTP/1.1"
    timeout = 30
    inst = None  # set by main

    def log_message(self, fmt, *args):
        log("%s %s" % (self.address_string(), fmt % args))

    def answer(self, code, success, message, details=None):
        body = json.dumps({"success": success, "message": message, "details": details or {}}).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def route(self):
        return self.path.split("?", 1)[0].rstrip("/") or "/"

    def do_GET(self):
        path = self.route()
        if path in ("/health", "/status"):
            if self.inst.resetting.is_set():
                return self.answer(200, False, "resetting", {"resets": self.inst.resets})
            healthy, probe = self.inst.probe()
            return self.answer(200, healthy, "ok" if healthy else "WordPress does not answer its front page",
                               dict(probe, site=self.inst.args.site, resets=self.inst.resets,
                                    last_reset=self.inst.last_reset))
        if path == "/config":
            return self.answer(200, True, "", self.inst.config)
        return self.answer(404, False, "no route %s %s" % (self.command, path))

    def do_POST(self):
        path = self.route()
        n = int(self.headers.get("Content-Length") or 0)
        if n:
            self.rfile.read(min(n, 1 << 16))
        if path in ("/reset", "/restart"):
            return self.answer(*self.inst.reset())
        return self.answer(404, False, "no route %s %s" % (self.command, path))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--listen", required=True, help="HOST:PORT")
    ap.add_argument("--site", required=True, help="the instance's base URL")
    ap.add_argument("--db", required=True)
    ap.add_argument("--mysql-defaults", required=True, help="a my.cnf with the instance's [client] user")
    ap.add_argument("--dump", required=True, help="the seeded database (mysqldump)")
    ap.add_argument("--config-json", required=True, help="what GET /config answers in details")
    ap.add_argument("--restore-timeout-s", type=int, default=60)
    ap.add_argument("--lock-wait-s", type=int, default=90)
    ap.add_argument("--probe-timeout-s", type=int, default=10)
    args = ap.parse_args()
    host, port = args.listen.rsplit(":", 1)
    Handler.inst = Instance(args)
    srv = http.server.ThreadingHTTPServer((host, int(port)), Handler)
    srv.daemon_threads = True
    log("serving %s for %s" % (args.listen, args.site))
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
