"""The LangGraph side of `cargo xtask bench load`: one node that answers the newest message
with the suite's fake OpenAI-compatible model, streamed (`langgraph dev` serves it as the
assistant `agent`; the suite writes `langgraph.json` and `.env` beside a copy of this file).

The node sends the model the newest message only, as our side's agent does, so a turn costs
the same however long the thread grew; the thread's state keeps the whole conversation.
"""

import os

from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph

model = ChatOpenAI(
    model="fake-model",
    base_url=os.environ["OPENAI_BASE_URL"],
    api_key=os.environ.get("OPENAI_API_KEY", "sk-load"),
    streaming=True,
    max_retries=0,
)


async def assistant(state: MessagesState):
    return {"messages": [await model.ainvoke(state["messages"][-1:])]}


builder = StateGraph(MessagesState)
builder.add_node("assistant", assistant)
builder.add_edge(START, "assistant")
builder.add_edge("assistant", END)
graph = builder.compile()
