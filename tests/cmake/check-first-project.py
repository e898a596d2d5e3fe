#!/usr/bin/env python3
"""Runs docs/first-project.md's program against a scripted OpenAI-compatible server.

    check-first-project.py WORK_DIR EXECUTABLE

Serves OpenAI's streaming Chat Completions on 127.0.0.1 (a port chosen at run time) from a
thread of this process. Each request without a tool result gets a get_weather tool call for
Oslo; a request that carries the tool's result gets the answer. Then, in an empty WORK_DIR:
  1. the program's first run: exit status 0, the tool call and the answer printed, 4 events
     verified (user message, tool call, tool response, answer);
  2. a second run: the session continues, 8 events verified, and its first request carried the
     first turn's answer (the model saw the history);
  3. a run against a port where nothing listens: exit status 1 (not a crash, not 0) and the
     "Connection refused" message on stderr.
Every request must ask for a stream, name the model and declare the get_weather tool; a
request that does not is answered with a 400 and recorded as a failure. Exits 1 with one line
per failed check.
"""

import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import threading

ANSWER = "It is 21 degrees and clear in Oslo."
failures = []
requests = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print(f"check-first-project: FAILED: {what}", file=sys.stderr)


def sse(obj):
    return ("data: " + json.dumps(obj) + "\n\n").encode()


def chunk(delta, finish=None):
    return sse({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000,
                "model": "llama3.2", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


def reply_for(body):
    messages = body.get("messages", [])
    has_tool_result = any(m.get("role") == "tool" for m in messages[-2:])
    out = [chunk({"role": "assistant", "content": ""})]
    if has_tool_result:
        for piece in (ANSWER[:10], ANSWER[10:]):
            out.append(chunk({"content": piece}))
        out.append(chunk({}, "stop"))
    else:
        call = {"index": 0, "id": f"call_{len(requests)}", "type": "function",
                "function": {"name": "get_weather", "arguments": ""}}
        out.append(chunk({"tool_calls": [call]}))
        out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"city\":"}}]}))
        out.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": " \"Oslo\"}"}}]}))
        out.append(chunk({}, "tool_calls"))
    out.append(sse({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1700000000,
                    "model": "llama3.2", "choices": [],
                    "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}}))
    out.append(b"data: [DONE]\n\n")
    return b"".join(out)


class handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
        requests.append(body)
        tools = [t.get("function", {}).get("name") for t in body.get("tools", [])]
        problem = None
        if self.path != "/v1/chat/completions":
            problem = f"path {self.path}"
        elif body.get("stream") is not True or body.get("model") != "llama3.2" or "get_weather" not in tools:
            problem = f"request without stream, model llama3.2 or the get_weather tool: {json.dumps(body)[:300]}"
        if problem:
            check(False, problem)
            data = json.dumps({"error": {"message": problem, "type": "invalid_request_error"}}).encode()
            self.send_response(400)
            self.send_header("content-type", "application/json")
        else:
            data = reply_for(body)
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def run(exe, work_dir, base_url):
    p = subprocess.run([exe, base_url], cwd=work_dir, capture_output=True, text=True, timeout=120)
    print(f"$ {exe} {base_url}  (exit status {p.returncode})\n{p.stdout}{p.stderr}")
    return p


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    work_dir, exe = sys.argv[1], os.path.abspath(sys.argv[2])
    shutil.rmtree(work_dir, ignore_errors=True)
    os.makedirs(work_dir)
    env_model = os.environ.pop("OPENAI_MODEL", None)  # the program's default model is expected
    os.environ.pop("OPENAI_API_KEY", None)
    if env_model:
        print(f"check-first-project: ignoring OPENAI_MODEL={env_model}")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"

    first = run(exe, work_dir, base_url)
    check(first.returncode == 0, f"first run: exit status {first.returncode}, expected 0")
    check('[tool call get_weather{"city":"Oslo"}]' in first.stdout, "first run: prints the tool call")
    check(f"assistant> {ANSWER}" in first.stdout, "first run: prints the answer")
    check("transcript: 4 events verified, signed by did:key:z" in first.stdout, "first run: 4 events verified")
    check(len(requests) == 2, f"first run: {len(requests)} model requests, expected 2 (call, answer)")
    if len(requests) == 2:
        tool_results = [m for m in requests[1].get("messages", []) if m.get("role") == "tool"]
        check(len(tool_results) == 1 and '"temp_c":21' in tool_results[0].get("content", "").replace(" ", ""),
              "first run: the second request carries get_weather's result")

    second = run(exe, work_dir, base_url)
    check(second.returncode == 0, f"second run: exit status {second.returncode}, expected 0")
    check("transcript: 8 events verified" in second.stdout, "second run: the continued session, 8 events verified")
    if len(requests) >= 3:
        history = json.dumps(requests[2].get("messages", []))
        check(ANSWER in history, "second run: the model sees the first turn's answer")
    server.shutdown()

    # A port where nothing listens: bound, then closed again.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    dead = run(exe, work_dir, f"http://127.0.0.1:{dead_port}/v1")
    check(dead.returncode == 1, f"no server: exit status {dead.returncode}, expected 1 (a crash is negative or > 1)")
    check("first_agent: the turn failed" in dead.stderr and "Connection refused" in dead.stderr,
          "no server: the 'turn failed ... Connection refused' message")

    if failures:
        return 1
    print("check-first-project: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
