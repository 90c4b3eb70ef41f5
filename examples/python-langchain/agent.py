"""A LangChain agent protected by loopguard's middleware (docs/python.md).

`create_agent` with `LoopGuardMiddleware()`: every tool call goes through the guard before it
runs, and its result is recorded after. The chat model is scripted (no network, no API key):
like a stuck model, it asks to read the same file 25 times. The tool runs 20 times; the 11th
result carries the guard's warning for the model; calls 21 to 25 are refused (the model gets
the block message as the tool's error) and the tool does not run.

Run it, with the loopguard package and LangChain v1 installed:
    pip install ./bindings/python "langchain>=1,<2"
    python examples/python-langchain/agent.py
(scripts/test-python.sh runs it in its venv, target/python-venv.)
"""

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

from loopguard.langchain import LoopGuardMiddleware


class StuckModel(BaseChatModel):
    """A scripted chat model: asks for the same tool call 25 times, then gives up."""

    turns: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.turns += 1
        if self.turns <= 25:
            call = {"name": "read_file", "args": {"path": "/srv/app/config.yaml"}, "id": f"call-{self.turns}", "type": "tool_call"}
            message = AIMessage(content="", tool_calls=[call])
        else:
            message = AIMessage(content="I could not find the port.")
        return ChatResult(generations=[ChatGeneration(message=message)])


tool_runs = 0


@tool
def read_file(path: str) -> str:
    """Reads a file."""
    global tool_runs
    tool_runs += 1
    return "port: 8080"


# The guard: loop detection on, OpenClaw's default thresholds, sessions in memory.
agent = create_agent(StuckModel(), [read_file], middleware=[LoopGuardMiddleware()])
result = agent.invoke(
    {"messages": [{"role": "user", "content": "Which port does the app use?"}]},
    {"recursion_limit": 200},
)

# What the model was given back for each of its calls.
results = [m for m in result["messages"] if isinstance(m, ToolMessage)]
for n, message in enumerate(results, start=1):
    print(f"call {n}: {message.status}: {message.content!r}")
print(f"read_file ran {tool_runs} times; the agent answered: {result['messages'][-1].content}")
