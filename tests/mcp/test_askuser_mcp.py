"""`askuser mcp` driven by the official MCP Python SDK (`mcp` on PyPI), end to end.

Each test starts a real `askuser serve` on 127.0.0.1:0 with its own data directory,
launches `askuser mcp` through the SDK's stdio client (it finds the bridge through
bridge.json), calls `ask_user`, and answers through the bridge's HTTP API as a
browser or `askuser answer` would.
"""

import json
import os
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client, types

ASKUSER = os.environ.get("ASKUSER_BIN", os.path.join(os.path.dirname(__file__), "../../target/debug/askuser"))


class Bridge:
    """A real `askuser serve` process."""

    def __init__(self, data_dir, addr="127.0.0.1:0", extra=()):
        self.data_dir = data_dir
        self.proc = subprocess.Popen(
            [ASKUSER, "serve", "--addr", addr, "--data-dir", data_dir, *extra],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stderr.readline().strip()
        assert line.startswith("askuser: open "), line
        self.url, self.token = line.removeprefix("askuser: open ").split("/#token=")
        threading.Thread(target=lambda: [None for _ in self.proc.stderr], daemon=True).start()

    def http(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.token}")
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def wait_pending(self, count=1, timeout=10):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, records = self.http("GET", "/v1/questions?status=pending")
            if status == 200 and len(records) >= count:
                return records
            time.sleep(0.05)
        raise AssertionError("no pending question appeared")

    def answer(self, answers, index=0):
        record = self.wait_pending(index + 1)[index]
        status, body = self.http("POST", f"/v1/questions/{record['id']}/answer", {"answers": answers})
        assert status == 200, body
        return record

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(timeout=10)


@pytest.fixture
def data_dir():
    with tempfile.TemporaryDirectory() as d:
        yield d


@pytest.fixture
def bridge(data_dir):
    b = Bridge(data_dir)
    yield b
    b.stop()


async def with_session(data_dir, body, extra_args=()):
    params = StdioServerParameters(
        command=ASKUSER,
        args=["mcp", "--data-dir", data_dir, "--progress-seconds", "1", *extra_args],
        env={"RUST_LOG": "askuser=debug", "PATH": os.environ.get("PATH", "")},
    )
    with tempfile.TemporaryFile("w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, client_info=types.Implementation(name="pytest-agent", version="1.0")) as session:
                await session.initialize()
                return await body(session)


def call(data_dir, arguments, answer=None, extra_args=(), progress=None):
    """Calls ask_user in one MCP session while `answer` (run in a thread) answers it."""

    async def body(session):
        async def on_progress(value, total, message):
            if progress is not None:
                progress.append((value, message))

        result = {}

        async def ask():
            result["r"] = await session.call_tool("ask_user", arguments, progress_callback=on_progress, read_timeout_seconds=60)

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            if answer is not None:
                await anyio.to_thread.run_sync(answer)
        return result["r"]

    return anyio.run(with_session, data_dir, body, extra_args)


def text_of(result):
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


def test_lists_ask_user_with_its_schemas(bridge, data_dir):
    async def body(session):
        return await session.list_tools()

    tools = anyio.run(with_session, data_dir, body).tools
    assert [t.name for t in tools] == ["ask_user"]
    tool = tools[0]
    props = tool.input_schema["properties"]
    assert props["questions"]["items"]["required"] == ["question"]
    assert set(props["questions"]["items"]["properties"]) == {"question", "header", "options", "multiSelect"}
    assert "metadata" in props and "choices" in props and "id" in props
    assert "(Recommended)" in tool.description and "Other" in tool.description
    # "pending" is the not-answered-yet result of --max-wait, which has no answeredAt.
    # "message": the text's words, for hosts that show the model only structuredContent.
    assert tool.output_schema["required"] == ["id", "status", "answered", "answers", "message"]
    assert "pending" in tool.output_schema["properties"]["status"]["enum"]


def test_single_select_returns_the_claude_sentence_and_structured_result(bridge, data_dir):
    args = {"questions": [{"question": "Which database?", "header": "DB", "options": [{"label": "PostgreSQL (Recommended)"}, {"label": "SQLite"}]}], "metadata": {"source": "pytest"}}
    r = call(data_dir, args, lambda: bridge.answer(["SQLite"]))
    assert not r.is_error
    assert text_of(r) == 'User has answered your questions: "Which database?"="SQLite". You can now continue with the user\'s answers in mind.'
    s = r.structured_content
    assert s["status"] == "answered" and s["answered"] is True
    assert s["answers"][0]["selectedOptions"] == ["SQLite"]
    assert s["metadata"] == {"source": "pytest"}
    # The inbox knows who asked: the MCP client's name and a session per connection.
    status, record = bridge.http("GET", f"/v1/questions/{s['id']}")
    assert record["request"]["agent"]["name"] == "pytest-agent"
    assert record["request"]["agent"]["sessionId"].startswith("mcp-")


def test_to_names_the_person_or_team_the_question_is_for(bridge, data_dir):
    args = {"question": "Drop the old index?", "choices": ["Yes", "No"], "to": "db-team"}
    r = call(data_dir, args, lambda: bridge.answer(["Yes"]))
    assert not r.is_error
    status, record = bridge.http("GET", f"/v1/questions/{r.structured_content['id']}")
    assert record["request"]["agent"]["assignee"] == "db-team"
    # A name that is not one is an error naming `to`, before anything is asked.
    bad = call(data_dir, {"question": "Q?", "to": "not a name"})
    assert bad.is_error and "to: expected a person or team name" in text_of(bad)


def test_multi_select_free_text_other_and_several_questions(bridge, data_dir):
    args = {"questions": [
        {"question": "Which features?", "multiSelect": True, "options": [{"label": "Auth"}, {"label": "API"}, {"label": "UI"}]},
        {"question": "Service name?"},
        {"question": "Which cloud?", "options": [{"label": "AWS"}, {"label": "GCP"}]},
    ]}
    answers = [{"selected": ["Auth", "UI"]}, {"custom": "order-processor"}, {"custom": "Hetzner"}]
    r = call(data_dir, args, lambda: bridge.answer(answers), extra_args=["--result-format", "text"])
    assert text_of(r) == "Which features? → Auth, UI\nService name? → order-processor\nWhich cloud? → Hetzner"
    s = r.structured_content
    assert s["answers"][0]["answer"] == ["Auth", "UI"]
    assert s["answers"][1]["wasCustom"] is True and s["answers"][2]["custom"] == "Hetzner"


def test_opal_shape_is_accepted(bridge, data_dir):
    r = call(data_dir, {"question": "Deploy now?", "choices": ["Yes", "No"]}, lambda: bridge.answer(["no"]))
    assert r.structured_content["answers"][0]["answer"] == "No"


def test_cancel_tells_the_model_not_to_assume(bridge, data_dir):
    def cancel():
        record = bridge.wait_pending()[0]
        assert bridge.http("POST", f"/v1/questions/{record['id']}/cancel")[0] == 200

    r = call(data_dir, {"question": "Proceed?"}, cancel)
    assert not r.is_error
    assert "declined" in text_of(r) and "Do not assume an answer" in text_of(r)
    assert r.structured_content["status"] == "cancelled"


def test_timeout(data_dir):
    b = Bridge(data_dir, extra=["--timeout", "1"])
    try:
        r = call(data_dir, {"question": "Anyone there?"})
        assert r.structured_content["status"] == "timed_out"
        assert "timed out" in text_of(r) and "Do not assume an answer" in text_of(r)
    finally:
        b.stop()


def test_invalid_input_is_a_tool_error_with_every_path(bridge, data_dir):
    r = call(data_dir, {"questions": [{"question": ""}, {"question": "Q", "options": [{"label": "A"}, {"label": "a"}]}]})
    assert r.is_error
    t = text_of(r)
    assert "questions[0].question: must not be empty" in t
    assert "questions[1].options[1].label: repeats the label" in t
    assert bridge.http("GET", "/v1/questions?status=all")[1] == []


def test_progress_arrives_during_a_long_wait(bridge, data_dir):
    progress = []

    def slow_answer():
        bridge.wait_pending()
        time.sleep(2.5)
        bridge.answer(["later"])

    r = call(data_dir, {"question": "Take your time?"}, slow_answer, progress=progress)
    assert r.structured_content["answers"][0]["answer"] == "later"
    assert len(progress) >= 2, progress
    assert all("Waiting for the user's answer" in m for _, m in progress)
    assert [v for v, _ in progress] == sorted(v for v, _ in progress)


def test_a_call_survives_a_bridge_restart(data_dir):
    first = Bridge(data_dir)
    addr = first.url.removeprefix("http://")
    second = []

    def restart_then_answer():
        first.wait_pending()
        first.stop(signal.SIGKILL)  # no clean shutdown: the store alone keeps the question
        time.sleep(0.5)
        second.append(Bridge(data_dir, addr=addr))
        record = second[0].answer(["after the restart"])
        assert record["request"]["questions"][0]["question"] == "Still there?"

    try:
        r = call(data_dir, {"question": "Still there?"}, restart_then_answer)
        assert not r.is_error, text_of(r)
        assert r.structured_content["answers"][0]["answer"] == "after the restart"
    finally:
        for b in second:
            b.stop()


def test_without_a_bridge_mcp_starts_one(data_dir):
    # No bridge runs: askuser mcp starts one in-process on the default address unless
    # it is taken, so use the flag-free path only when the default port is free.
    import socket

    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", 7823)) == 0:
            pytest.skip("something already listens on the default port 7823")

    def answer_via_bridge_file():
        deadline = time.monotonic() + 10
        while not os.path.exists(os.path.join(data_dir, "bridge.json")):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        with open(os.path.join(data_dir, "bridge.json")) as f:
            bf = json.load(f)
        b = Bridge.__new__(Bridge)
        b.url, b.token = bf["url"], bf["token"]
        b.answer(["yes"])

    r = call(data_dir, {"question": "Self-hosted?"}, answer_via_bridge_file)
    assert r.structured_content["answers"][0]["answer"] == "yes"


def test_a_stale_bridge_json_gets_a_bridge_of_its_own_and_the_stranger_nothing(data_dir):
    # A bridge that crashed left bridge.json; a stranger now listens on its port. askuser
    # mcp must not send it the token or the question (issue 28, F1): it starts its own
    # bridge, as with no bridge.json at all.
    import socket

    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", 7823)) == 0:
            pytest.skip("something already listens on the default port 7823")
    stranger = socket.socket()
    stranger.bind(("127.0.0.1", 0))
    stranger.listen()
    stranger.settimeout(0.1)
    heard, done = [], threading.Event()

    def listen():
        while not done.is_set():
            try:
                conn, _ = stranger.accept()
            except OSError:
                continue
            conn.settimeout(0.5)
            try:
                while chunk := conn.recv(4096):
                    heard.append(chunk)
            except OSError:
                pass
            conn.close()

    threading.Thread(target=listen, daemon=True).start()
    gone = subprocess.Popen(["true"])
    gone.wait()
    stale_url = "http://127.0.0.1:%d" % stranger.getsockname()[1]
    token = "stale-admin-token-0123456789abcdef"
    bridge_file = os.path.join(data_dir, "bridge.json")
    with open(bridge_file, "w") as f:
        json.dump({"url": stale_url, "token": token, "pid": gone.pid}, f)
    os.chmod(data_dir, 0o700)

    def answer_at_the_new_bridge():
        deadline = time.monotonic() + 10
        while True:
            with open(bridge_file) as f:
                bf = json.load(f)
            if bf["url"] != stale_url:
                break
            assert time.monotonic() < deadline, "askuser mcp started no bridge of its own"
            time.sleep(0.05)
        b = Bridge.__new__(Bridge)
        b.url, b.token = bf["url"], bf["token"]
        b.answer(["mine"])

    try:
        r = call(data_dir, {"question": "Trust the file?"}, answer_at_the_new_bridge)
    finally:
        done.set()
    assert r.structured_content["answers"][0]["answer"] == "mine"
    assert heard == [], b"".join(heard)


def test_a_call_survives_the_exit_of_the_process_that_hosted_the_bridge(data_dir):
    # Two agents' MCP servers share one bridge, run by the first; the first exits while
    # the second waits for an answer. The second takes the bridge over (same address,
    # same token) and its call still completes.
    import socket

    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", 7823)) == 0:
            pytest.skip("something already listens on the default port 7823")
    # The first agent's server starts the bridge at its first call (not before: a host that
    # only probes or lists tools starts nothing).
    first = subprocess.Popen([ASKUSER, "mcp", "--data-dir", data_dir], stdin=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for message in [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "first", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "ask_user", "arguments": {"question": "First?"}}},
    ]:
        first.stdin.write((json.dumps(message) + "\n").encode())
    first.stdin.flush()
    bridge_file = os.path.join(data_dir, "bridge.json")

    def bridge_from_file():
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with open(bridge_file) as f:
                    bf = json.load(f)
                b = Bridge.__new__(Bridge)
                b.url, b.token = bf["url"], bf["token"]
                if b.http("GET", "/v1/health")[0] == 200:
                    return b
            except (OSError, ValueError, urllib.error.URLError):
                pass
            time.sleep(0.1)
        raise AssertionError("no bridge answered")

    hosted = bridge_from_file()

    def first_exits_then_answer():
        mine = next(r for r in hosted.wait_pending(2) if "Who hosts now?" in json.dumps(r))
        first.stdin.close()  # the hosting agent's session ends
        first.wait(timeout=15)
        time.sleep(0.5)
        status, body = bridge_from_file().http("POST", f"/v1/questions/{mine['id']}/answer", {"answers": ["still here"]})
        assert status == 200, body

    try:
        r = call(data_dir, {"question": "Who hosts now?"}, first_exits_then_answer)
        assert r.structured_content["answers"][0]["answer"] == "still here"
    finally:
        if first.poll() is None:
            first.kill()
