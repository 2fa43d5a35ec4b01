#!/usr/bin/python3
"""An outboxd HTTP push receiver in Python (standard library only).

Verifies Outboxd-Signature (or Standard Webhooks' webhook-signature, sent by a target with
"standard_webhooks": true), runs the task, answers 200 (done) or 500 (retry later).
Usage: OUTBOXD_SECRET=s3cret docs/examples/http_receiver.py 8091
"""
import base64, hashlib, hmac, json, os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SECRET = os.environ.get("OUTBOXD_SECRET", "").encode()


def signed(body, header):
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    stamp = fields.get("t", "0")
    mac = hmac.new(SECRET, stamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    fresh = stamp.isdigit() and abs(time.time() - int(stamp)) < 300
    return fresh and hmac.compare_digest(mac, fields.get("v1", ""))


def standard_signed(body, headers):
    """Standard Webhooks: the verifier libraries' secret is "whsec_" + base64(SECRET)."""
    stamp = headers.get("webhook-timestamp", "0")
    signed_text = f"{headers.get('webhook-id', '')}.{stamp}.".encode() + body
    mac = base64.b64encode(hmac.new(SECRET, signed_text, hashlib.sha256).digest()).decode()
    fresh = stamp.isdigit() and abs(time.time() - int(stamp)) < 300
    given = [s[3:] for s in headers.get("webhook-signature", "").split() if s.startswith("v1,")]
    return fresh and any(hmac.compare_digest(mac, s) for s in given)


class Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: outboxd reuses its connections

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if "webhook-signature" in self.headers:
            verified = standard_signed(body, self.headers)
        else:
            verified = signed(body, self.headers.get("Outboxd-Signature", ""))
        if SECRET and not verified:
            return self.answer(401, b"bad signature")  # 4xx: a dead letter, never retried
        task = json.loads(body)
        # Delivery is at least once: make the effect idempotent on dispatch_key
        # (task["delivery"] > 1 says this row was delivered before).
        print("running", task["activity_type"], task["dispatch_key"], task["input"], flush=True)
        self.answer(200, b'{"ok":true}')  # 2xx: done; 5xx, 408, 429: retried with backoff

    def answer(self, status, body):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 8091), Receiver).serve_forever()
