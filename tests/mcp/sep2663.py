"""The tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`) for the `mcp` 2.x `Client`.

The Python SDK ships no tasks client, only the hook for one: a `ClientExtension` whose
`ResultClaim` takes a `resultType: "task"` result and resolves it to the call's result.
This one polls `tasks/get`, serves each input request through the client's own callbacks
(the elicitation callback, as for any form) and answers it with `tasks/update`, as the
extension's requester does. It records what it saw, for the tests to check.
"""

from typing import Any, Literal

import anyio
import mcp_types as types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientRequestContext
from pydantic import ConfigDict, TypeAdapter

TASKS = "io.modelcontextprotocol/tasks"


class CreateTaskResult(types.Result):
    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class TaskRequest(types.Request[dict[str, Any], str]):
    """tasks/get, tasks/update and tasks/cancel, with their params as a dict."""


_dict = TypeAdapter(dict[str, Any])
_input_request = TypeAdapter(types.InputRequest)


async def tasks_call(session, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return await session.send_request(TaskRequest(method=method, params=params), _dict)


class TaskEnded(Exception):
    """The task ended without a result (cancelled or failed)."""

    def __init__(self, task):
        super().__init__(f"task {task['status']}: {task.get('error') or task.get('statusMessage')}")
        self.task = task


class Tasks(ClientExtension):
    identifier = TASKS

    def __init__(self, on_created=None):
        self.on_created = on_created  # async (created, session) -> None
        self.created = []  # each CreateTaskResult
        self.seen = []  # each tasks/get result

    def claims(self):
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self._resolve)]

    async def _resolve(self, created: CreateTaskResult, ctx: ClaimContext) -> types.CallToolResult:
        self.created.append(created)
        if self.on_created:
            await self.on_created(created, ctx.session)
        answered = set()
        while True:
            task = await tasks_call(ctx.session, "tasks/get", {"taskId": created.task_id})
            self.seen.append(task)
            assert task["resultType"] == "complete" and task["taskId"] == created.task_id, task
            status = task["status"]
            if status == "completed":
                return types.CallToolResult.model_validate(task["result"], by_name=False)
            if status in ("failed", "cancelled"):
                raise TaskEnded(task)
            if status == "input_required":
                responses = {}
                for key, raw in task["inputRequests"].items():
                    if key in answered:
                        continue
                    request = _input_request.validate_python(raw, by_name=False)
                    response = await ctx.session.dispatch_input_request(ClientRequestContext(session=ctx.session, request_id=key), request)
                    responses[key] = response.model_dump(by_alias=True, mode="json", exclude_none=True)
                    answered.add(key)
                if responses:
                    await tasks_call(ctx.session, "tasks/update", {"taskId": created.task_id, "inputResponses": responses})
            await anyio.sleep(task.get("pollIntervalMs", 500) / 1000)

    def statuses(self):
        """The statuses polled, each once in the order first seen."""
        return list(dict.fromkeys(t["status"] for t in self.seen))
