"""The LangGraph side of `cargo xtask bench race`: the planner-executor shape on LangGraph.

A StateGraph with a planner node (sets N tasks) and an executor node (completes one task per
step with the result "ok " * 8 and loops through a conditional edge until every task is
done), checkpointed by SqliteSaver on a file in WAL mode with synchronous=FULL, invoked with
durability="sync" (every step's checkpoint is durable before the next step starts). No
model is called.

Usage: langgraph_race.py N DIR [sync|async|exit]. The durability (default sync) is
LangGraph's: `exit` writes the checkpoints when the run ends, the counterpart of our
RedbDurability::TurnEnd. Measures, on a database in DIR:
  live         invoke until done (completions/s = N / seconds)
  walk forward every checkpoint's state, oldest first (LangGraph lists history newest
               first only: the listing is read through, then walked from the oldest)
  walk back    every checkpoint's state, newest first (get_state_history as it streams)
  jump         a freshly opened connection and graph: get_state at the checkpoint 10% in
               (the median of 5 fresh opens); the same at 50% and 90%, the slowest of
               the three reported beside it
  file size    the database, its WAL and shared-memory files
  peak RSS     getrusage(RUSAGE_SELF).ru_maxrss
and prints one JSON line. Checks done == N, and that the state at the jump has the cursor
the walk saw there.
"""

import json
import operator
import os
import resource
import statistics
import sqlite3
import sys
import time
from typing import Annotated, TypedDict

from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph

RESULT = "ok " * 8
GOAL = "Complete every task of the race"
THREAD = "race"
# How many fresh opens the jump is timed over (the median is reported, as on our side).
JUMPS = 5


class Board(TypedDict):
    goal: str
    # Task titles, set by the planner.
    tasks: list
    # The executor's results, one per completed task, in order (appended by the reducer).
    done: Annotated[list, operator.add]
    # The next task to run.
    cursor: int


def make_planner(n):
    def planner(state: Board):
        return {"tasks": [f"task {i}" for i in range(n)], "cursor": 0}

    return planner


def executor(state: Board):
    # The task at the cursor is done; its result joins the others.
    return {"done": [RESULT], "cursor": state["cursor"] + 1}


def route(state: Board):
    return "executor" if len(state["done"]) < len(state["tasks"]) else END


def open_graph(path, n):
    conn = sqlite3.connect(path, check_same_thread=False)
    saver = SqliteSaver(conn)
    saver.setup()  # creates the tables and sets journal_mode=WAL
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    graph = StateGraph(Board)
    graph.add_node("planner", make_planner(n))
    graph.add_node("executor", executor)
    graph.add_edge(START, "planner")
    graph.add_conditional_edges("planner", route, ["executor", END])
    graph.add_conditional_edges("executor", route, ["executor", END])
    return conn, graph.compile(checkpointer=saver)


def check(holds, what):
    if not holds:
        raise SystemExit(f"langgraph_race: wrong result: {what}")


def main():
    n = int(sys.argv[1])
    directory = sys.argv[2]
    durability = sys.argv[3] if len(sys.argv) > 3 else "sync"
    check(durability in ("sync", "async", "exit"), f"durability {durability}")
    path = os.path.join(directory, "race.sqlite")
    config = {"configurable": {"thread_id": THREAD}, "recursion_limit": n + 16}

    conn, app = open_graph(path, n)
    mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    sync = conn.execute("PRAGMA synchronous").fetchone()[0]
    check(mode == "wal" and sync == 2, f"journal_mode={mode} synchronous={sync}")
    started = time.perf_counter()
    out = app.invoke(
        {"goal": GOAL, "tasks": [], "done": [], "cursor": 0}, config, durability=durability
    )
    live = time.perf_counter() - started
    done = len(out["done"])
    check(done == n, f"done = {done}, not {n}")
    check(all(result == RESULT for result in out["done"]), "a result is wrong")

    # Forward: LangGraph lists a thread's history newest first only, so the forward walk
    # reads the listing through (keeping what it reads of each state: its cursor and
    # checkpoint id, not the states, which would not fit in memory at 10,000 tasks), then
    # walks it oldest first.
    started = time.perf_counter()
    listed = [
        (s.values.get("cursor"), s.config["configurable"]["checkpoint_id"])
        for s in app.get_state_history(config)
    ]
    forward = []
    for cursor, checkpoint_id in reversed(listed):
        forward.append((cursor, checkpoint_id))
    walk_forward = time.perf_counter() - started

    started = time.perf_counter()
    backward = []
    for snapshot in app.get_state_history(config):
        backward.append(snapshot.values.get("cursor"))
    walk_back = time.perf_counter() - started
    check(
        [c for c, _ in forward] == list(reversed(backward)),
        "the forward and backward walks saw different states",
    )
    checkpoints = len(forward)
    check(forward[-1][0] == n, f"the last checkpoint's cursor is {forward[-1][0]}")
    conn.close()
    del app

    # The jump: a freshly opened connection and graph reading one checkpoint, JUMPS times
    # (each on a new connection); the median is reported, as on our side. Then the same at
    # 50% and 90%: the slowest of the three is reported beside it.
    def jump_to(position):
        expected, checkpoint_id = forward[position]
        jumps = []
        for _ in range(JUMPS):
            started = time.perf_counter()
            conn, app = open_graph(path, n)
            jump_config = {"configurable": {"thread_id": THREAD, "checkpoint_id": checkpoint_id}}
            state = app.get_state(jump_config)
            cursor = state.values.get("cursor")
            jumps.append(time.perf_counter() - started)
            check(cursor == expected, f"the jump to {position} read cursor {cursor}, not {expected}")
            conn.close()
            del app
        return statistics.median(jumps), expected

    position = checkpoints // 10
    jump, cursor = jump_to(position)
    slowest = (position, jump)
    for other in (checkpoints // 2, checkpoints * 9 // 10):
        took, _ = jump_to(other)
        if took > slowest[1]:
            slowest = (other, took)

    size = sum(
        os.path.getsize(path + suffix)
        for suffix in ("", "-wal", "-shm")
        if os.path.exists(path + suffix)
    )
    print(
        json.dumps(
            {
                "side": "langgraph",
                "n": n,
                "positions": checkpoints,
                "done": done,
                "live_s": live,
                "walk_forward_s": walk_forward,
                "walk_back_s": walk_back,
                "jump_s": jump,
                "jump_position": position,
                "jump_cursor": cursor,
                "slowest_jump": list(slowest),
                "file_bytes": size,
                "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            }
        )
    )


if __name__ == "__main__":
    main()
