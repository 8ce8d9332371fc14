"""`askuser mcp` in both eras of MCP, driven by the Python SDK v2 `Client` (`mcp` on PyPI).

Each test runs in three modes: `auto` (the client probes `server/discover` and, since askuser
offers 2026-07-28, speaks it: no `initialize`, a `_meta` envelope on every request),
pinned to `2026-07-28` (no probe at all: the first request is the call), and `legacy`
(`initialize` with 2025-11-25). The host's own dialog is elicitation: `elicitation/create`
in the handshake era, an `input_required` result that the client answers by retrying the
call in 2026-07-28; the SDK serves both with the same callback. A 2026-07-28 client that
declares the tasks extension (SEP-2663, `sep2663.Tasks`) gets a task: it polls `tasks/get`
and answers the dialog with `tasks/update`.
"""

import json
import os
import tempfile
import time

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters, stdio_client

from sep2663 import TaskEnded, Tasks, tasks_call
from test_askuser_mcp import ASKUSER, bridge, data_dir  # noqa: F401 (fixtures)

MODES = {"auto": "2026-07-28", "2026-07-28": "2026-07-28", "legacy": "2025-11-25"}
MODERN = ["auto", "2026-07-28"]
DEPLOY = {"question": "Deploy now?", "choices": ["Yes", "No"]}


def client(data_dir, mode, errlog, elicit=None, extensions=()):
    params = StdioServerParameters(
        command=ASKUSER,
        args=["mcp", "--data-dir", data_dir],
        env={"RUST_LOG": "askuser=debug", "PATH": os.environ.get("PATH", "")},
    )
    return Client(
        stdio_client(params, errlog=errlog),
        mode=mode,
        client_info=types.Implementation(name="pytest-v2", version="1.0"),
        elicitation_callback=elicit,
        extensions=list(extensions),
        read_timeout_seconds=60,
    )


def run(data_dir, mode, body, elicit=None, extensions=()):
    """Runs `body(c)` with a connected client; returns what it returns."""

    async def main():
        with tempfile.TemporaryFile("w+") as errlog:
            try:
                async with client(data_dir, mode, errlog, elicit, extensions) as c:
                    assert c.protocol_version == MODES[mode], c.protocol_version
                    return await body(c)
            except BaseException:
                errlog.seek(0)
                print(errlog.read())
                raise

    return anyio.run(main)


def call_answered_by(bridge, data_dir, mode, arguments, answer, elicit=None, extensions=()):
    """Calls ask_user while `answer` (in a thread) answers through the bridge."""

    async def body(c):
        got = {}

        async def ask():
            got["r"] = await c.call_tool("ask_user", arguments)

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            await anyio.to_thread.run_sync(answer)
        return got["r"]

    return run(data_dir, mode, body, elicit, extensions)


@pytest.mark.parametrize("mode", MODES)
def test_an_answer_in_the_inbox_reaches_the_model(bridge, data_dir, mode):
    r = call_answered_by(bridge, data_dir, mode, DEPLOY, lambda: bridge.answer(["Yes"]))
    assert not r.is_error
    assert r.structured_content["status"] == "answered"
    assert r.structured_content["answers"][0]["answer"] == "Yes"
    assert r.structured_content["message"] == r.content[0].text


@pytest.mark.parametrize("mode", MODES)
def test_a_decline_in_the_inbox_tells_the_model_not_to_assume(bridge, data_dir, mode):
    def decline():
        record = bridge.wait_pending()[0]
        assert bridge.http("POST", f"/v1/questions/{record['id']}/cancel")[0] == 200

    r = call_answered_by(bridge, data_dir, mode, DEPLOY, decline)
    assert r.structured_content["status"] == "cancelled"
    assert "Do not assume an answer" in r.content[0].text


@pytest.mark.parametrize("mode", MODES)
def test_the_tool_is_listed_and_invalid_input_is_a_tool_error(bridge, data_dir, mode):
    async def body(c):
        tools = (await c.list_tools()).tools
        assert [t.name for t in tools] == ["ask_user"]
        assert tools[0].output_schema["properties"]["status"]["enum"][-1] == "pending"
        r = await c.call_tool("ask_user", {"questions": [{"question": ""}]})
        assert r.is_error and "questions[0].question: must not be empty" in r.content[0].text

    run(data_dir, mode, body)
    assert bridge.http("GET", "/v1/questions?status=all")[1] == []


@pytest.mark.parametrize("mode", MODES)
def test_the_hosts_dialog_is_answered_and_the_inbox_hears_where(bridge, data_dir, mode):
    asked = []

    async def elicit(ctx, params):
        asked.append(params)
        schema = params.requested_schema
        assert [o["const"] for o in schema["properties"]["q1"]["oneOf"]] == ["Yes", "No"], schema
        return types.ElicitResult(action="accept", content={"q1": "No"})

    async def body(c):
        return await c.call_tool("ask_user", DEPLOY)

    r = run(data_dir, mode, body, elicit)
    assert len(asked) == 1
    assert r.structured_content["answers"][0]["answer"] == "No"
    [record] = bridge.http("GET", "/v1/questions?status=all")[1]
    assert record["status"] == "answered"
    assert "own dialog" in json.dumps(record), record


@pytest.mark.parametrize("mode", MODES)
def test_a_decline_by_a_person_in_the_dialog_is_their_no(bridge, data_dir, mode):
    async def elicit(ctx, params):
        await anyio.sleep(1.2)  # read the question first
        return types.ElicitResult(action="decline")

    async def body(c):
        return await c.call_tool("ask_user", DEPLOY)

    r = run(data_dir, mode, body, elicit)
    assert r.structured_content["status"] == "cancelled"


@pytest.mark.parametrize("mode,tasks", [(m, False) for m in MODES] + [(m, True) for m in MODERN])
def test_a_host_that_declines_its_dialog_at_once_waits_for_the_inbox(bridge, data_dir, mode, tasks):
    forms = []

    async def elicit(ctx, params):
        forms.append(params)
        return types.ElicitResult(action="decline")  # a headless host's automatic answer

    def answer():
        bridge.wait_pending()
        time.sleep(1)
        bridge.answer(["Yes"])

    extensions = [Tasks()] if tasks else []
    r = call_answered_by(bridge, data_dir, mode, DEPLOY, answer, elicit, extensions)
    assert r.structured_content["answers"][0]["answer"] == "Yes", "the host's decline was not the person's"
    assert len(forms) == 1
    if tasks:
        # The declined form is no longer asked for: the task waits for the inbox.
        assert extensions[0].statuses() == ["input_required", "working", "completed"], extensions[0].seen


def test_a_probe_and_a_listing_start_no_bridge(data_dir):
    # No bridge runs. Connecting (auto: a server/discover probe) and listing the tools
    # must not start one: only a tool call does.
    async def body(c):
        await c.list_tools()

    run(data_dir, "auto", body)
    run(data_dir, "legacy", body)
    assert not os.path.exists(os.path.join(data_dir, "bridge.json"))
    assert not os.path.exists(os.path.join(data_dir, "askuser.db"))



def answered_in_the_dialog(record):
    return "own dialog" in json.dumps(record)


@pytest.mark.parametrize("mode", MODES)
def test_a_task_is_answered_in_the_inbox(bridge, data_dir, mode):
    tasks = Tasks()
    r = call_answered_by(bridge, data_dir, mode, DEPLOY, lambda: bridge.answer(["Yes"]), extensions=[tasks])
    assert r.structured_content["answers"][0]["answer"] == "Yes"
    assert r.structured_content["message"] == r.content[0].text
    if mode == "legacy":
        assert tasks.created == [], "a handshake-era call is never a task"
        return
    [created] = tasks.created
    [record] = bridge.http("GET", "/v1/questions?status=all")[1]
    assert created.status == "working" and created.task_id.startswith(record["id"] + ":"), created
    assert len(created.task_id) > len(record["id"]) + 16, "the task id is not guessable from the question id"
    assert created.ttl_ms is None and created.poll_interval_ms == 500
    assert tasks.statuses()[-1] == "completed" and "input_required" not in tasks.statuses(), tasks.seen
    assert tasks.seen[-1]["result"]["resultType"] == "complete"


@pytest.mark.parametrize("mode", MODERN)
def test_a_tasks_dialog_is_answered_with_tasks_update(bridge, data_dir, mode):
    forms = []

    async def elicit(ctx, params):
        forms.append((ctx.request_id, params))
        await anyio.sleep(1.2)  # a person reads the question
        return types.ElicitResult(action="accept", content={"q1": "No"})

    tasks = Tasks()
    r = run(data_dir, mode, lambda c: c.call_tool("ask_user", DEPLOY), elicit, [tasks])
    assert r.structured_content["answers"][0]["answer"] == "No"
    assert [key for key, _ in forms] == ["askuser"], "the dialog is shown once"
    assert tasks.statuses() == ["input_required", "working", "completed"] or tasks.statuses() == ["input_required", "completed"]
    [record] = bridge.http("GET", "/v1/questions?status=all")[1]
    assert record["status"] == "answered" and answered_in_the_dialog(record), record


@pytest.mark.parametrize("mode", MODERN)
def test_an_answer_in_the_inbox_takes_the_tasks_dialog_away(bridge, data_dir, mode):
    gone = []

    async def elicit(ctx, params):
        # The person answers in the browser while the host's dialog is open: the task's
        # next poll asks for no input any more, so a host closes its dialog.
        await anyio.to_thread.run_sync(lambda: bridge.answer(["Yes"]))
        task_id = tasks.created[0].task_id
        with anyio.fail_after(10):
            while True:
                task = await tasks_call(ctx.session, "tasks/get", {"taskId": task_id})
                if task["status"] != "input_required":
                    gone.append(task)
                    break
                await anyio.sleep(0.05)
        return types.ElicitResult(action="accept", content={"q1": "No"})  # too late: ignored

    tasks = Tasks()
    r = run(data_dir, mode, lambda c: c.call_tool("ask_user", DEPLOY), elicit, [tasks])
    assert gone[0]["status"] == "completed" and "inputRequests" not in gone[0], gone
    assert r.structured_content["answers"][0]["answer"] == "Yes", "the inbox answered first"
    [record] = bridge.http("GET", "/v1/questions?status=all")[1]
    assert not answered_in_the_dialog(record), record


@pytest.mark.parametrize("mode", MODERN)
def test_cancelling_a_task_withdraws_its_question(bridge, data_dir, mode):
    async def cancel(created, session):
        assert bridge.wait_pending()[0]["status"] == "pending"
        assert (await tasks_call(session, "tasks/cancel", {"taskId": created.task_id}))["resultType"] == "complete"

    tasks = Tasks(on_created=cancel)

    async def body(c):
        with pytest.raises(TaskEnded) as ended:
            await c.call_tool("ask_user", DEPLOY)
        return ended.value.task

    task = run(data_dir, mode, body, extensions=[tasks])
    assert task["status"] == "cancelled" and "withdrawn" in task["statusMessage"], task
    [record] = bridge.http("GET", "/v1/questions?status=all")[1]
    assert record["status"] == "withdrawn", record


@pytest.mark.parametrize("mode", MODERN)
def test_tasks_methods_name_what_is_wrong(bridge, data_dir, mode):
    async def declared(c):
        with pytest.raises(Exception) as unknown:
            await tasks_call(c.session, "tasks/get", {"taskId": "mcp-1-1:0011223344556677"})
        return unknown.value

    async def undeclared(c):
        with pytest.raises(Exception) as missing:
            await tasks_call(c.session, "tasks/get", {"taskId": "mcp-1-1:0011223344556677"})
        return missing.value

    unknown = run(data_dir, mode, declared, extensions=[Tasks()])
    assert unknown.error.code == -32602, unknown
    assert 'unknown task "mcp-1-1:0011223344556677"' in unknown.error.message
    assert 'call ask_user with {"id": "mcp-1-1"}' in unknown.error.message
    missing = run(data_dir, mode, undeclared)
    assert missing.error.code == -32021, missing
