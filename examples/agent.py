#!/usr/bin/env python3
"""A small example agent for skillshift's external agent protocol (docs/formats.md#agent-protocol). Python 3, stdlib only.

Run it with:  skillshift run UID --condition src --agent 'cmd:python3 examples/agent.py'

The protocol: the harness starts this program once per attempt and talks JSON lines (one JSON object per
line, UTF-8) over stdin and stdout. Anything written to stderr is logged by the harness.

  harness -> agent, once:      {"type": "task", "uid": ..., "intent": ..., "start_url": ..., "max_steps": 10,
                                "skills": [{"name": ..., "params": [...], "description": ...}]}
  harness -> agent, per step:  {"type": "observation", "step": 0, "url": ..., "title": ...,
                                "axtree": "<accessibility tree, WebArena text form>",
                                "last_action_error": null | "<why the previous action failed>"}
  agent -> harness, per step:  exactly one of
                                {"type": "action", "action": "click [12]"}
                                {"type": "skill", "name": "create_issue", "args": {"project": "a/b", "title": "x"}}
                               optionally preceded by lines reporting skills the agent ran by itself:
                                {"type": "skill_report", "name": ..., "ok": true | false, "error": null | "..."}

Actions use WebArena's syntax: click [id], type [id] [text] [0|1] (1 presses Enter, the default), hover [id],
press [keys], scroll [up|down], goto [url], go_back, go_forward, stop [answer]. The ids are the [n] of the tree.
A line that is not valid JSON or not one of these messages is an agent error: the attempt is recorded as
error (agent), not as a failure. Flush stdout after each line.

The policy here is deliberately simple (it is an example, not a baseline): it reads quoted phrases from the
intent ('Open the issue "Crash on save"'), clicks a link or button named exactly like a phrase, types a phrase
into a text box when the intent asks to search, type or enter something, clicks a link or button named in the
intent when it has done nothing else yet, and otherwise stops, answering with the page's first heading for
questions.
"""

import json
import re
import sys

NODE = re.compile(r"^\s*\[(\d+)\]\s+(\S+)\s+'((?:[^'\\]|\\.)*)'")
QUOTED = re.compile(r"""(?:^|(?<=[\s(:]))["'\u201c\u2018]([^"'\u201d\u2019]+)["'\u201d\u2019](?=[\s.,;:!?)]|$)""")
CLICKABLE = {"link", "button", "tab", "menuitem", "checkbox", "radio", "option", "treeitem", "switch"}
TYPEABLE = {"textbox", "searchbox", "combobox"}
TYPE_VERBS = ("search", "type", "enter", "fill", "write", "filter", "find")
QUESTION_WORDS = ("what", "which", "who", "whom", "when", "where", "how", "is ", "are ", "does", "do ", "tell")


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def log(text):
    print(text, file=sys.stderr, flush=True)


def parse_tree(axtree):
    """The tree's nodes as (id, role, name)."""
    nodes = []
    for line in axtree.splitlines():
        m = NODE.match(line)
        if m:
            nodes.append((int(m.group(1)), m.group(2), m.group(3).replace("\\'", "'")))
    return nodes


class Agent:
    def __init__(self, task):
        self.intent = task.get("intent", "")
        self.max_steps = int(task.get("max_steps", 10))
        self.phrases = [p.strip() for p in QUOTED.findall(self.intent) if p.strip()]
        self.typed = set()  # phrases already typed
        self.done = set()  # (role, name) already acted on
        self.last = None  # (role, name) of the last action

    def next_action(self, obs):
        if obs.get("last_action_error"):
            log("previous action failed: %s" % obs["last_action_error"])
        nodes = parse_tree(obs.get("axtree", ""))
        if int(obs.get("step", 0)) >= self.max_steps - 1:
            return self.stop(nodes)
        intent = self.intent.lower()

        exact, named = self.clickable_matches(nodes)
        if exact:
            return self.act(exact, "click [%d]" % exact[0])
        pending = [p for p in self.phrases if p not in self.typed]
        boxes = [n for n in nodes if n[1] in TYPEABLE]
        if any(v in intent for v in TYPE_VERBS) and pending and boxes:
            by_name = [n for n in boxes if n[2] and n[2].lower() in intent]
            box = (by_name or boxes)[0]
            self.typed.add(pending[0])
            return self.act(box, "type [%d] [%s] [1]" % (box[0], pending[0]))
        if named and not self.done:
            return self.act(named, "click [%d]" % named[0])
        return self.stop(nodes)

    def clickable_matches(self, nodes):
        """A clickable node named exactly like a quoted phrase, and the longest one named in the intent."""
        fresh = [n for n in nodes if n[1] in CLICKABLE and n[2] and (n[1], n[2]) not in self.done]
        wanted = {p.lower() for p in self.phrases}
        exact = next((n for n in fresh if n[2].lower() in wanted), None)
        intent = self.intent.lower()
        named = [n for n in fresh if len(n[2]) >= 4 and re.search(r"\b%s\b" % re.escape(n[2].lower()), intent)]
        return exact, (max(named, key=lambda n: len(n[2])) if named else None)

    def act(self, node, action):
        self.done.add((node[1], node[2]))
        self.last = node
        return action

    def stop(self, nodes):
        answer = ""
        if self.intent.lower().startswith(QUESTION_WORDS):
            headings = [n[2] for n in nodes if n[1] == "heading" and n[2]]
            answer = headings[0] if headings else ""
        return "stop [%s]" % answer


def main():
    agent = None
    for raw in sys.stdin:
        raw = raw.strip()
        if not raw:
            continue
        message = json.loads(raw)
        kind = message.get("type")
        if kind == "task":
            agent = Agent(message)
            log("task %s: %s" % (message.get("uid"), message.get("intent")))
        elif kind == "observation" and agent is not None:
            action = agent.next_action(message)
            log("step %s: %s" % (message.get("step"), action))
            send({"type": "action", "action": action})
        else:
            log("ignoring message of type %r" % kind)


if __name__ == "__main__":
    try:
        main()
    except (BrokenPipeError, KeyboardInterrupt):
        pass
