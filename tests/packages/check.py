#!/usr/bin/env python3
"""Checks one installed askuser the way a user and an MCP host use it (tests/packages/run).

    check.py [--group] VERSION COMMAND...

COMMAND is how the installed askuser is started: its path in a venv or an npm prefix, or
`uvx …` / `npx …` words. Checks, each against a throwaway data directory:
  1. `askuser --version` names VERSION;
  2. `askuser serve` starts a bridge that serves the embedded web UI (the page and its wasm);
  3. `askuser mcp` answers MCP's `initialize` over stdio, then asks one question with the
     `ask_user` tool, which `askuser answer` answers, and the tool's result carries the answer;
  4. an exit code comes back unchanged (`askuser validate` of an invalid request: 2);
  5. SIGTERM to the started command ends the bridge (through askuser's npm launcher too) and
     the command. With --group, SIGTERM goes to its process group, as a terminal's Ctrl-C or
     a host that ends a group does: npx runs its command through `sh -c`, which passes no
     signal on.
Standard library only.
"""

import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

STEP = 30  # seconds any one step may take


def fail(message):
    print(f"check: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def lines_of(stream):
    """A queue that gets each line of `stream` (None at its end), read in a thread."""
    q = queue.Queue()

    def pump():
        for line in stream:
            q.put(line)
        q.put(None)

    threading.Thread(target=pump, daemon=True).start()
    return q


def next_line(q, what, timeout=STEP):
    try:
        line = q.get(timeout=timeout)
    except queue.Empty:
        fail(f"no {what} after {timeout} s")
    if line is None:
        fail(f"the stream ended before {what}")
    return line


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie has ended; only its parent has not read its status yet.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def main():
    args = sys.argv[1:]
    group = args[:1] == ["--group"]
    args = args[1:] if group else args
    if len(args) < 2:
        fail("usage: check.py [--group] VERSION COMMAND...")
    version, cmd = args[0], args[1:]
    data = tempfile.mkdtemp(prefix="askuser-pkg-")
    os.chmod(data, 0o700)
    run = lambda *args, **kw: subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=STEP, **kw)

    # 1. The version.
    out = run("--version")
    if out.returncode != 0 or not out.stdout.startswith(f"askuser {version} "):
        fail(f"`askuser --version` printed {out.stdout!r} {out.stderr!r} (exit {out.returncode}), not askuser {version}")
    print(f"check: {out.stdout.strip()}")

    # 2. A bridge, with the web UI in it.
    serve = subprocess.Popen(
        [*cmd, "serve", "--addr", "127.0.0.1:0", "--data-dir", data], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        errs = lines_of(serve.stderr)
        line = next_line(errs, "`askuser: open …` from askuser serve").strip()
        if not line.startswith("askuser: open "):
            fail(f"askuser serve printed {line!r}")
        url, _token = line.removeprefix("askuser: open ").split("/#token=")
        # The page as built (`/` may be the loader for a device the bridge does not know).
        with urllib.request.urlopen(url + "/index.html", timeout=STEP) as r:
            page = r.read().decode()
        wasm = [w.split('"')[0] for w in page.split('href="')[1:] if w.split('"')[0].endswith("_bg.wasm")]
        if 'src="/askuser-init.js"' not in page or not wasm:
            fail(f"the page has no web UI (is crates/askuser-bridge/ui embedded?): {page[:300]!r}")
        with urllib.request.urlopen(url + wasm[0], timeout=STEP) as r:
            body = r.read()
        if body[:4] != b"\0asm":
            fail(f"{wasm[0]} is not wasm: {body[:16]!r}")
        print(f"check: askuser serve at {url} serves the web UI ({wasm[0]}, {len(body) // 1024} KiB)")
        with open(os.path.join(data, "bridge.json")) as f:
            bridge_pid = json.load(f)["pid"]

        # 3. askuser mcp: initialize, then one question asked and answered.
        with tempfile.TemporaryFile("w+") as mcp_err:
            mcp = subprocess.Popen([*cmd, "mcp", "--data-dir", data], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=mcp_err, text=True)
            replies = lines_of(mcp.stdout)

            def send(message):
                mcp.stdin.write(json.dumps(message) + "\n")
                mcp.stdin.flush()

            def reply(id, what):
                while True:
                    message = json.loads(next_line(replies, what, timeout=60))
                    if message.get("id") == id:
                        if "error" in message:
                            fail(f"{what}: {message['error']}")
                        return message["result"]

            try:
                send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "package-test", "version": "1"}}})
                init = reply(1, "the reply to initialize")
                if "tools" not in init.get("capabilities", {}) or not init.get("protocolVersion"):
                    fail(f"initialize: {init}")
                print(f"check: askuser mcp answered initialize: {init['serverInfo']['name']} {init['serverInfo'].get('version', '')}, MCP {init['protocolVersion']}")
                send({"jsonrpc": "2.0", "method": "notifications/initialized"})
                question = {"questions": [{"question": "Ship the package?", "header": "Ship", "options": [{"label": "Yes"}, {"label": "No"}]}]}
                send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "ask_user", "arguments": question}})
                deadline = time.monotonic() + STEP
                while True:
                    pending = json.loads(run("pending", "--json", "--data-dir", data).stdout or "[]")
                    if pending:
                        break
                    if time.monotonic() > deadline:
                        fail("ask_user's question never reached the bridge")
                    time.sleep(0.1)
                answered = run("answer", "--data-dir", data, pending[0]["id"], "Yes")
                if answered.returncode != 0:
                    fail(f"askuser answer: exit {answered.returncode}: {answered.stderr}")
                result = reply(2, "ask_user's result")
                s = result.get("structuredContent", {})
                if result.get("isError") or s.get("status") != "answered" or s["answers"][0]["selectedOptions"] != ["Yes"]:
                    fail(f"ask_user's result: {result}")
                print(f"check: ask_user asked {question['questions'][0]['question']!r} over MCP; `askuser answer` answered; the tool returned {s['answers'][0]['selectedOptions']}")
                mcp.stdin.close()
                if mcp.wait(timeout=STEP) != 0:
                    fail(f"askuser mcp exited {mcp.returncode} at the end of its input")
            finally:
                if mcp.poll() is None:
                    mcp.kill()
                    mcp.wait()
                    mcp_err.seek(0)
                    print(mcp_err.read(), file=sys.stderr)

        # 4. An exit code comes back as the binary gave it.
        bad = run("validate", "-", input="{}")
        if bad.returncode != 2:
            fail(f"`askuser validate` of an invalid request exited {bad.returncode}, not 2: {bad.stderr}")
        print("check: exit codes come back unchanged (validate of an invalid request: 2)")

        # 5. SIGTERM to what was started (or its group) ends the bridge, and then the command.
        if group:
            os.killpg(serve.pid, signal.SIGTERM)
        else:
            serve.send_signal(signal.SIGTERM)
        try:
            code = serve.wait(timeout=STEP)
        except subprocess.TimeoutExpired:
            fail("the bridge's command did not end after SIGTERM")
        deadline = time.monotonic() + STEP
        while alive(bridge_pid):
            if time.monotonic() > deadline:
                fail(f"the bridge (pid {bridge_pid}) still runs after SIGTERM to its command (pid {serve.pid})")
            time.sleep(0.05)
        through = " to the process group" if group else "" if bridge_pid == serve.pid else f" to the command (pid {serve.pid}), passed on,"
        print(f"check: SIGTERM{through} ended the bridge (pid {bridge_pid}); the command exited {code}")
        if code not in (0, -signal.SIGTERM):
            fail(f"the bridge's command exited {code} after SIGTERM")
    finally:
        if serve.poll() is None:
            os.killpg(serve.pid, signal.SIGKILL)
            serve.wait()
        # A bridge left behind by a failed check: only one started for this data directory.
        try:
            with open(os.path.join(data, "bridge.json")) as f:
                pid = json.load(f)["pid"]
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if data.encode() in f.read():
                    os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError, KeyError):
            pass
        subprocess.run(["rm", "-rf", data])
    print("check: ok")


if __name__ == "__main__":
    main()
