"""An ACP agent without session/resume, for tests: runs the agent command given as
arguments and passes its messages through, except that `initialize`'s answer loses
`sessionCapabilities.resume`. A client then reopens sessions with session/load."""

import json
import subprocess
import sys
import threading

agent = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)


def forward_input():
    for line in sys.stdin.buffer:
        agent.stdin.write(line)
        agent.stdin.flush()
    agent.stdin.close()


threading.Thread(target=forward_input, daemon=True).start()
for line in agent.stdout:
    try:
        message = json.loads(line)
        capabilities = message["result"]["agentCapabilities"]["sessionCapabilities"]
        capabilities.pop("resume", None)
        line = (json.dumps(message) + "\n").encode()
    except (ValueError, KeyError, TypeError):
        pass
    sys.stdout.buffer.write(line)
    sys.stdout.buffer.flush()
sys.exit(agent.wait())
