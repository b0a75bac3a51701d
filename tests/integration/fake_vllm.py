"""A stand-in for `vllm serve`, for the sandbox's real-engine host tests that need no
engine: run as `python fake_vllm.py serve <model> [flags]` (the test's fake engine venv
routes peagle's launcher here). It checks what the host must get right (the model dir
under the /opt/ml root, the speculative drafter path, the last --port wins), answers
/ping and /invocations (SSE with usage, like vLLM), and fails like vLLM 0.31 does when
--max-model-len exceeds the model's 2048 positions. Standard library only."""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def _last(argv: list[str], flag: str) -> str | None:
    values = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == flag]
    return values[-1] if values else None


class Handler(BaseHTTPRequestHandler):
    def log_message(self, fmt: str, *args: object) -> None:
        print(f"INFO:     {self.address_string()} - {fmt % args}", flush=True)

    def do_GET(self) -> None:
        self.send_response(200 if self.path == "/ping" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        if self.path != "/invocations":
            self.send_response(404)
            self.end_headers()
            return
        words = ["fake", " vllm", " tokens"]
        if body.get("stream"):
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream; charset=utf-8")
            self.end_headers()
            for i, w in enumerate(words, 1):
                chunk = {
                    "choices": [{"index": 0, "delta": {"content": w}}],
                    "usage": {"prompt_tokens": 4, "completion_tokens": i},
                }
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(b"data: [DONE]\n\n")
            return
        out = json.dumps(
            {
                "choices": [{"index": 0, "message": {"content": "".join(words)}}],
                "usage": {"prompt_tokens": 4, "completion_tokens": 3},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def main(argv: list[str]) -> int:
    assert argv[0] == "serve", argv
    model = Path(argv[1])
    print(f"(APIServer pid=1) INFO fake vllm non-default args: {argv}", flush=True)
    if not (model / "config.json").is_file():
        print(f"ValueError: no config.json in {model}", flush=True)
        return 1
    spec = _last(argv, "--speculative-config")
    if spec and not Path(json.loads(spec)["model"]).is_dir():
        print(f"ValueError: drafter {json.loads(spec)['model']} missing", flush=True)
        return 1
    max_len = int(_last(argv, "--max-model-len") or 2048)
    if max_len > 2048:
        print("Traceback (most recent call last):", flush=True)
        print(
            f"  Value error, User-specified max_model_len ({max_len}) is greater than the "
            "derived max_model_len (max_position_embeddings=2048.0 or model_max_length=None "
            "in model's config.json).",
            flush=True,
        )
        print("    For further information visit https://errors.pydantic.dev/2.14/v/value_error")
        return 1
    port = int(_last(argv, "--port") or 8080)
    host = _last(argv, "--host") or "0.0.0.0"
    print(f"(APIServer pid=1) INFO Starting vLLM server on http://{host}:{port}", flush=True)
    ThreadingHTTPServer((host, port), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
